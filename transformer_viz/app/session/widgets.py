"""Small Streamlit helpers shared by the pages: text in the current language, view widgets, the view, charts."""

from __future__ import annotations

import contextvars
import functools
import re
from collections.abc import Callable, Sequence

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.server.checkpoints import checkpoint_name
from transformer_viz.app.server.figure_cache import shared
from transformer_viz.app.server.state import VIEW_FIELDS, View
from transformer_viz.app.session.link import field_texts
from transformer_viz.figures.common import format_number
from transformer_viz.figures.fit import TEXT_MIN_WIDTH
from transformer_viz.i18n import CATALOGS, LANGUAGE_NAMES, LANGUAGES, text

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


def view_widget(widget: Callable, field: str, label: str, *args, **kwargs):
    """`widget(label, *args, ...)` for a view field: keyed by the field's name, kept for the session.

    Its value lives in st.session_state[field] (the link is written from there: frame/link.py), so it
    outlives page changes. Choices are labelled by FORMATS[field]. A value the widget cannot show (from a
    link, a room, or the options of another model) gives way to the widget's default.
    """
    if field in FORMATS:
        kwargs.setdefault("format_func", FORMATS[field])
    default = getattr(View, field)
    name = getattr(widget, "__name__", "")
    if name in ("radio", "selectbox") and "index" not in kwargs and default in args[0]:
        kwargs["index"] = list(args[0]).index(default)  # the widget's own default is the view's
    fit_to_widget(name, field, args)
    if name == "selectbox" and None in args[0]:  # Streamlit shows a None value as "no choice": the placeholder
        kwargs.setdefault("placeholder", kwargs["format_func"](None))
    if name == "multiselect":  # Streamlit's own placeholder is English ("Choose options")
        kwargs.setdefault("placeholder", tr("widget.choose"))
    translated = field in state.TRANSLATED_FIELDS
    if translated:
        by_language = st.session_state.setdefault(state.CHOICE_LABELS, {}).setdefault(field, {})
        by_language[lang()] = {kwargs["format_func"](option): option for option in args[0]}
    if kwargs.get("on_change") is not None:
        kwargs["on_change"] = on_real_change(field, kwargs["on_change"])
    value = widget(label, *args, key=field, persist_state="session", **kwargs)
    if translated:
        st.session_state.setdefault(state.CHOICES_SHOWN, {})[field] = value
    return value


def lazy_expander(container, label: str, key: str):
    """An expander whose `.open` the script reads: opening or closing it reruns the page (Streamlit's lazy
    expander), so what it holds is drawn only while it is open. Its label is part of its identity: after a
    language switch it is a new expander, which opens as the old one was."""
    return container.expander(label, expanded=bool(st.session_state.get(key)), key=key, on_change="rerun")


class Fold:
    """View widgets in an expander, drawn only while it is open (Streamlit's lazy expander): a folded widget costs
    the page nothing. Folded, a field keeps its session value, checked as its widget would check it, and reads
    as the widget would return it."""

    def __init__(self, container, label: str, key: str):
        self.expander = lazy_expander(container, label, key)

    def widget(self, widget: Callable, field: str, label: str, *args, **kwargs):
        """`view_widget(widget, field, label, ...)` in the fold; folded, the field's value without a widget."""
        if self.expander.open:
            with self.expander:
                return view_widget(widget, field, label, *args, **kwargs)
        fit_to_widget(widget.__name__, field, args)
        return st.session_state.get(field, getattr(View, field))


def fit_to_widget(name: str, field: str, args: tuple) -> None:
    """Make the session's value of `field` one the widget `name` (drawn with `args`) can show: a multiple choice
    keeps its known options; any other value it cannot show (an unknown option, a number out of a slider's range)
    is dropped, and the widget shows its default."""
    if field not in st.session_state:
        return
    value = st.session_state[field]
    if name == "slider":
        if type(value) is not type(args[0]) or not args[0] <= value <= args[1]:
            del st.session_state[field]
    elif name in ("text_input", "toggle", "checkbox"):
        if type(value) is not (str if name == "text_input" else bool):
            del st.session_state[field]
    elif isinstance(value, list):  # multiselect, multiple pills
        known = [item if item in args[0] else option_labelled(field, args[0], item) for item in value]
        known = [item for item in known if item is not None]
        if known != value:
            st.session_state[field] = known
            read_as(field, known)
    elif value not in args[0]:
        named = option_labelled(field, args[0], value)
        if named is None:
            del st.session_state[field]
        else:
            st.session_state[field] = named
            read_as(field, named)


def option_labelled(field: str, options: Sequence, label: object) -> object | None:
    """The option that `label` names on screen in some language, or None. Links made before they named ids carry
    labels (`task=English → French`, `kind=编码器自注意力`): they still open their view."""
    if field not in FORMATS or not isinstance(label, str):
        return None
    for code in LANGUAGES:
        token = LABELS_IN.set(code)
        try:
            found = [option for option in options if FORMATS[field](option) == label]
        finally:
            LABELS_IN.reset(token)
        if found:
            return found[0]
    return None


def read_as(field: str, value: object) -> None:
    """The opening link named `field`'s value by a label: it asked for `value` (not a setting to name as reset)."""
    asked = st.session_state.get(state.LINK_ASKED, {})
    if field in asked:
        asked[field] = field_texts(field, value)


def language_widget(container, label: str, on_change: Callable) -> str:
    """The language: shown by its name, linked by its code (`lang=zh`)."""
    return view_widget(container.radio, state.LANG, label, LANGUAGES, horizontal=True, on_change=on_change)


def restore_choices() -> None:
    """Turn translated choices that arrive as labels of another language back into their options.

    Streamlit identifies a choice by its label. A request the browser sent before it redrew a language switch (a
    room's poll, a click under load) names the choices in the old language: their options are not found, and the
    label itself would become the value. Callbacks run before the script, so each one calls this first
    (`callback`), and so does the sidebar before any widget.
    """
    for field, by_language in st.session_state.get(state.CHOICE_LABELS, {}).items():
        labels = {text: option for language_labels in by_language.values() for text, option in language_labels.items()}
        options = set(labels.values())
        value = st.session_state.get(field)
        if isinstance(value, list):
            restored = [choice if choice in options else labels.get(choice, choice) for choice in value]
            if restored != value:
                st.session_state[field] = restored
        elif value is not None and value not in options and value in labels:
            st.session_state[field] = labels[value]


def callback(function: Callable) -> Callable:
    """A widget's callback, run with the translated choices restored (see restore_choices)."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        restore_choices()
        return function(*args, **kwargs)
    return call


def on_real_change(field: str, function: Callable) -> Callable:
    """A view widget's callback, run only when its choice changed: not for its own label in another language."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        restore_choices()
        shown = st.session_state.get(state.CHOICES_SHOWN, {})
        if field in shown and st.session_state.get(field) == shown[field]:
            return
        return function(*args, **kwargs)
    return call


def head_label(head_id: str) -> str:
    """A head id "cross-2-1" (layers and heads from 1) as "Cross-attention · Layer 2 · Head 1"."""
    kind, layer, head = head_id.rsplit("-", 2)
    return f"{tr(f'kind.{kind}')} · {tr('layer_head', layer=layer, head=head)}"


def relabel_translated() -> None:
    """After a language switch: write the translated widgets' values again, so that they show their labels in the
    new language (a keyed widget keeps its identity, and the browser its shown label, unless its value is written).
    A written None shows the selectbox's placeholder, which view_widget makes None's label."""
    for field in state.TRANSLATED_FIELDS:
        if field in st.session_state:
            st.session_state[field] = st.session_state[field]


def current_view() -> View:
    """The view as the widgets of this session set it (fields whose widget was never drawn: defaults)."""
    values = {f: st.session_state[f] for f in VIEW_FIELDS if f in st.session_state}
    for field, value in values.items():
        if isinstance(value, list):  # multiselect and pills return lists; the view is frozen
            values[field] = tuple(value)
    return View(**values)


def chart(fig, key: str, on_select: str | Callable = "ignore"):
    """st.plotly_chart with the figure's own colours (not Streamlit's theme) and a compact mode bar whose
    camera saves a PNG at twice the size (sharp on a slide). The figure joins the view's download. With
    `on_select`, a click selects one point (a cell, a tile, a block)."""
    fig = shared(fig)  # margins settled, its dict made once (figure_cache.SharedFigure)
    st.session_state.setdefault(state.VIEW_FIGURES, {})[key] = fig
    hide_cell_numbers_below(fig, key)
    return st.plotly_chart(
        fig if on_select == "ignore" else fig.selecting_points(), key=key, theme=None, on_select=on_select,
        selection_mode="points",
        config={"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"],
                "toImageButtonOptions": {"format": "png", "scale": 2, "filename": key}},
    )


def hide_cell_numbers_below(fig, key: str) -> None:
    """Cell numbers that fit only from some figure width on (layout.meta[TEXT_MIN_WIDTH]) are hidden in a
    narrower chart: by a CSS container query on the chart's own element, which knows its width (the server
    does not: 150 % browser zoom, a sidebar or a projector change it)."""
    meta = fig.layout.meta
    min_width = meta.get(TEXT_MIN_WIDTH) if isinstance(meta, dict) else None
    if min_width and re.fullmatch(r"[\w-]+", key):
        box = f".st-key-{key}"
        st.html(f"<style>{box}{{container-type:inline-size}}"
                f"@container (width < {int(min_width)}px){{{box} g.heatmap-label{{display:none}}}}</style>")


def clamped_index(value: int | None, count: int) -> int:
    """An index for a widget's default that exists among `count` options."""
    return min(max(value or 0, 0), count - 1)


# The narrowest the main column gets, in px: presenter mode at 150 % zoom of a 1280×720 projector (796 px; the
# sidebar open at 1280 px leaves 820). Figures are laid out for the narrowest width they are drawn at, so that
# their labels fit there, and only grow wider elsewhere. Cell numbers that need more room are written for up to
# the widest (a full-HD screen without the sidebar) and shown only where they fit (hide_cell_numbers_below).
MAIN_WIDTH, MAX_MAIN_WIDTH = 790, 1880
