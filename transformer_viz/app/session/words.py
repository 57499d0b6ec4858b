"""The words of the app in the session's language: the catalogs' sentences (`tr`), errors, text a user typed, and
how each choice of the view is labelled on screen (`FORMATS`)."""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.server.checkpoints import checkpoint_name
from transformer_viz.app.server.state import View
from transformer_viz.figures.numbers import format_number
from transformer_viz.i18n import CATALOGS, LANGUAGE_NAMES, text

LABELS_IN = contextvars.ContextVar("labels_in", default=None)  # a language `lang()` says for a moment


def lang() -> str:
    """The language chosen in the sidebar: of the catalogs' text and of every figure (`lang=lang()`); before its
    widget is drawn in a session's first run, the one the link named (frame/link.py::open_link put it here)."""
    return LABELS_IN.get() or st.session_state.get(state.LANG, View.lang)


def tr(key: str, /, **values) -> str:
    """A sentence of the catalogs (transformer_viz.i18n) in the language chosen in the sidebar."""
    return text(key, lang(), **values)


def error_text(error: Exception) -> str:
    """The sentence of an error from the package (or the model service) in the chosen language.

    English is the error's own sentence. A TranslatableError is written from the catalog's
    "detail.<key>" in other languages, its words ("input", "characters") and task names translated
    too; any other error keeps its English sentence.
    """
    key = getattr(error, "key", None)
    english = CATALOGS["en"]
    if lang() == "en" or f"detail.{key}" not in english:
        return str(error)

    def word(name: str, value):
        if name in ("task", "current_task") and f"task.{value}" in english:
            return tr(f"task.{value}")
        return tr(f"detail.word.{value}") if isinstance(value, str) and f"detail.word.{value}" in english else value

    return tr(f"detail.{key}", **{name: word(name, value) for name, value in error.values.items()})


# Line breaks of every kind: a blank line would end the code span below and let the rest render as Markdown.
LINE_BREAKS = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def literal(text) -> str:
    """Text a user typed (or a token or message quoting it) for a Markdown element, as a code span: nothing in
    it renders, not a link, a bare URL, emphasis, a colour, an emoji or a formula; a line break shows as ⏎."""
    text = LINE_BREAKS.sub("⏎", str(text))
    fence = "`" * (1 + max(map(len, re.findall(r"`+", text)), default=0))  # longer than any run of ` inside
    return f"{fence} {text} {fence}"  # Markdown strips one space on each side


def counted(index: int) -> str:
    """Layers, heads and steps count from 1 on screen and in links (the trace counts from 0)."""
    return str(index + 1)


def weights_label(weights: str) -> str:
    """"pretrained", "random", "trained" or an extra folder's "checkpoint:<name>", as the screen names them."""
    name = checkpoint_name(weights)
    return tr(f"weights.{weights}") if name is None else tr("weights.checkpoint", name=name)


# How each choice is labelled on screen. Option values are stable identifiers (the link names them: session/link.py);
# only these functions translate them.
FORMATS: dict[str, Callable[[object], str]] = {
    state.LANG: LANGUAGE_NAMES.get,
    state.SOURCE: lambda source: tr(f"source.{source}"),
    state.TASK: lambda name: tr(f"task.{name}"),
    state.ARCHITECTURE: lambda architecture: tr(f"architecture.{architecture}"),
    state.WEIGHTS: weights_label,
    state.MAX_LEN: lambda n: tr("side.max_len_task") if n == 0 else str(n),
    state.POSITIONAL: lambda positional: tr(f"positional.{positional}"),
    state.NORM_FIRST: lambda pre: tr("norm.pre" if pre else "norm.post"),
    state.MASK_VALUE: format_number,
    state.KIND: lambda kind: tr(f"kind.{kind}"),  # the figures' names too
    state.MASK_KIND: lambda kind: tr(f"kind.{kind}"),
    state.VALUE: lambda value: tr(f"value.{value}"),
    state.LAYER: counted,
    state.HEAD: counted,
    state.TRAIN_FROM: lambda start: tr(f"training.from_{start}"),
    **{f: lambda switch: tr(f"break.{switch}") for f in (state.BREAKS, state.A_BREAKS, state.B_BREAKS)},
    **{f: lambda head_id: head_label(head_id) for f in (state.ABLATE, state.A_ABLATE, state.B_ABLATE)},
    **{f: weights_label for f in (state.A_WEIGHTS, state.B_WEIGHTS)},
    **{f: lambda variant: tr(f"compare.variant_{variant}") for f in (state.A_VARIANT, state.B_VARIANT)},
    state.ABLATION: lambda mode: tr(f"break.ablation_{mode}"),
    state.STACK: lambda stack: tr(f"layers.{stack}"),
    state.SIDE: lambda side: tr("tokens.source" if side == "src" else "tokens.target"),
}


def head_label(head_id: str) -> str:
    """A head id "cross-2-1" (layers and heads from 1) as "Cross-attention · Layer 2 · Head 1"."""
    kind, layer, head = head_id.rsplit("-", 2)
    return f"{tr(f'kind.{kind}')} · {tr('layer_head', layer=layer, head=head)}"
