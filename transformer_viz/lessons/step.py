"""What a lesson step is, and what it may ask of the page that runs it (no Streamlit here).

A step is one module of this folder: the view it sets up, its formula, the facts it computes from the live
model, its figures, and `show(host)`, which draws through a `Host` what may be seen before the reveal and returns
its `Question` (lessons/question.py): the kind of answer, the truth computed from the model, and `reveal`, which
draws what answers it (a measured number, a highlighted head, the next word) and says the answer. The app's Lesson
page (app/pages/lesson.py) is the host: a generic runner that knows no step; it calls `reveal` only once the
answer is revealed, so a step cannot draw its answer early by mistake.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from transformer_viz.lessons.question import Question, unasked


class Host(Protocol):
    """The page a step draws on. Views and runs are the app's (`view.src_text`, `run.trace`, ...)."""

    lang: str
    min_font: int  # the smallest text a figure may draw, px (larger in presenter mode): every figure builder's
    #                `min_font=`; `page().figure` passes it by itself
    width: int  # px: the width a figure of the step is laid out for (the page's main column)
    max_width: int  # px: the widest the main column grows (a figure may be laid out up to it)

    def text(self, key: str, /, **values) -> str: ...  # a sentence of the catalogs, in the session's language
    def literal(self, text: str) -> str: ...  # user text, shown as typed (never Markdown)
    def page(self, show_tokens: bool = True, pad_to: int = 0) -> Any: ...  # the view's run (.view, .run, .trace,
    #   .model, .architecture: what the model is and can do, analysis/architecture.py; .figure(builder, *args)), or
    #   None after saying what went wrong
    def view(self) -> Any: ...
    def architecture(self, view) -> Any: ...  # what the view's model is and can do (analysis/architecture.py),
    #                                         without running it; None when it has no model
    def run_of(self, view) -> Any: ...  # the run of another view, None when its weights cannot be had
    def random_model(self, config, seed: int) -> Any: ...
    def cached(self, function: Callable, *args) -> Any: ...  # function(*args), computed once for the class
    def shared_figure(self, builder: Callable, *args, **kwargs) -> Any: ...  # builder(*args, lang=, **kwargs) once
    #                                                        for the class (pass min_font=host.min_font yourself)
    def columns(self, spec, gap: str = "small") -> list[Host]: ...
    def slot(self) -> Host: ...  # a place of its own on the page, which `again` empties
    def again(self) -> Host: ...  # a slot emptied, to draw anew (the reveal draws there what the answer marks)
    def chart(self, fig, key: str) -> None: ...
    def metric(self, label: str, value: str) -> None: ...
    def table(self, columns: Mapping[str, list]) -> None: ...
    def caption(self, text: str) -> None: ...
    def info(self, text: str) -> None: ...
    def token_chips(self, label: str, tokens) -> None: ...
    def text_input(self, field: str, label: str, **kwargs) -> str: ...  # a widget bound to view field `field`
    def slider(self, field: str, label: str, low: int, high: int) -> int: ...
    def sampling(self) -> None: ...  # the Decoding page's sampling controls (temperature, top-k, top-p, seed)
    def train(self, view) -> int | None: ...  # a training control; the steps of the session's trained model
    def training_time(self, view) -> tuple[float, float]: ...  # seconds the view's training takes here:
    #                                  (with a core free, at the slowest measured on a server busy with a class)


@dataclass(frozen=True)
class Step:
    """One step: its catalog keys are `lesson.<name>.*` (title, text, question, answer, ...)."""

    name: str
    page: str  # the explorer page that shows this view
    formula: str  # LaTeX, the same in every language; %s holes are filled with `formula_words`
    show: Callable[[Host], Question]  # draws what may be seen before the reveal -> the question
    setup: Mapping[str, object] = field(default_factory=dict)  # view values beyond the defaults (link names)
    formula_words: tuple[str, ...] = ()  # catalog keys of the words in the formula
    # The model's own code the step is about: (function, the beginnings of its lines to mark), shown beside it
    code: tuple[tuple[Callable, tuple[str, ...]], ...] = ()
    # The attention kinds its idea needs: on a model without one (cross-attention in a decoder-only model) the
    # runner says so and offers the step on an encoder-decoder instead of running `show`
    needs: tuple[str, ...] = ()


def not_here(host: Host, question: str, why: str) -> Question:
    """The question of a step whose view no longer shows what it asks about: said at once, since the step's
    figures are missing for the same reason, and again as its answer."""
    said = host.text("lesson.not_here", why=why)
    host.caption(said)
    return unasked(question, said)


def held_back(host: Host, what: str) -> Host:
    """Where a figure or fact that answers the question stands while the answer is hidden: say it comes with it.
    -> the slot, which the reveal draws `again`."""
    slot = host.slot()
    slot.caption(host.text("lesson.held_back", what=what))
    return slot


def repeated_pair(tokens) -> tuple[int, int] | None:
    """The first two neighbouring positions that hold the same token (None: there are none)."""
    return next(((i, i + 1) for i in range(len(tokens or ()) - 1) if tokens[i] == tokens[i + 1]), None)


def within(value: int | None, count: int) -> int:
    """A layer or head index the model has: the view's, kept inside 0..count-1."""
    return min(max(value or 0, 0), count - 1)


def layer_head(ctx, kind: str) -> tuple[int, int]:
    """The view's layer and head of attention `kind`, kept inside the shown model."""
    return within(ctx.view.layer, ctx.trace.n_layers(kind)), within(ctx.view.head, ctx.trace.config.n_heads)
