"""Lesson page: the generic runner of the steps in transformer_viz/lessons/ (it knows no step).

A step sets the view (task, input, kind, layer, head...) for the point it makes, explains it with a
formula and live figures, asks a question to predict and reveals the answer computed from the model. Opening
"Reveal the answer" reruns the page with `StreamlitHost.revealed`: only then does a step draw what answers it.
The view stays in the sidebar and the link: students may change it, and the answer follows.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from transformer_viz.analysis.source import code_excerpt
from transformer_viz.app.frame.code import show_code
from transformer_viz.app.pages.decoding import sampling_controls
from transformer_viz.app.pages.training import run_training, show_result
from transformer_viz.app.rooms import answering
from transformer_viz.app.rooms.follow import following
from transformer_viz.app.rooms.ticket import exit_ticket
from transformer_viz.app.server import figure_cache, models, state, trainings
from transformer_viz.app.server.state import VIEW_FIELDS, View
from transformer_viz.app.session.charts import MAIN_WIDTH, MAX_MAIN_WIDTH, VISUALLY_HIDDEN, chart, figure_min_font
from transformer_viz.app.session.page import page_context, token_chips
from transformer_viz.app.session.widgets import current_view, lazy_expander, view_widget
from transformer_viz.app.session.words import error_text, lang, literal, tr
from transformer_viz.data.tasks import get_task
from transformer_viz.i18n import particular
from transformer_viz.lessons import STEPS
from transformer_viz.lessons.question import Question, unasked
from transformer_viz.lessons.step import Step
from transformer_viz.weights.architectures import architecture_of

# What a step never changes: the language, presenter mode, the lesson itself, and the fields whose view default
# means "the page's own choice", which only their widgets know: the task's learning rate and batch on Training,
# a few telling dimensions on Embeddings (written as such, an empty selection would not even fit in a link).
KEPT = (state.LANG, state.PRESENT, state.LESSON_STEP, state.BPE_CORPUS, state.BPE_MERGES, state.TRAIN_LR,
        state.TRAIN_BATCH, state.DIMS)
# How long a training takes here. A free core does about 3e8 of trainings.training_cost a second (the reverse
# task's 400 steps, 4.4e9, took 15 s of one core, 2026-11-26), plus the snapshots and the evaluation of 200 inputs;
# a worker trains at a low priority, so a server busy with a class or other work is slower: on a busy 2-core
# machine the same 400 steps took 148-199 s, up to 13 times as long.
COST_PER_CORE_SECOND, EVALUATION_SECONDS, BUSY_SLOWDOWN = 3e8, 2.0, 13


class StreamlitHost:
    """What a step draws on (lessons.step.Host): the page, or one of its columns."""

    width, max_width = MAIN_WIDTH, MAX_MAIN_WIDTH

    def __init__(self, where=st, deferred: list | None = None, slot=None) -> None:
        self.where, self.slot_of = where, slot  # slot: the st.empty() this host draws into (Host.slot)
        self.deferred = [] if deferred is None else deferred  # what the page does once the step is drawn (train)
        self.lang, self.min_font = lang(), figure_min_font()

    def text(self, key: str, /, **values) -> str:
        return tr(key, **values)

    def literal(self, text: str) -> str:
        return literal(text)

    def page(self, show_tokens: bool = True, pad_to: int = 0):
        with self.where.container():
            return page_context(show_tokens=show_tokens, pad_to=pad_to)

    def view(self) -> View:
        return current_view()

    def architecture(self, view: View):
        resolved = models.resolve(view)
        return None if resolved.model is None else architecture_of(resolved.model)

    def run_of(self, view: View):
        resolved = models.resolve(view)
        if resolved.model is None or resolved.weights != view.weights:
            return None
        try:
            return models.run(view, resolved)
        except ValueError:  # an input this model cannot read (too long for it): no such run, as with no weights
            return None

    def random_model(self, config, seed: int):
        return models.random_model(config, seed)

    def cached(self, function, *args):
        return _cached(_qualified(function), args, function)

    def shared_figure(self, builder, *args, **kwargs):
        return _shared_figure(_qualified(builder), args, tuple(sorted(kwargs.items())), self.lang, builder)

    def columns(self, spec, gap: str = "small") -> list[StreamlitHost]:
        return [StreamlitHost(column, self.deferred) for column in self.where.columns(spec, gap=gap)]

    def slot(self) -> StreamlitHost:
        place = self.where.empty()
        return StreamlitHost(place.container(), self.deferred, slot=place)

    def again(self) -> StreamlitHost:
        return StreamlitHost(self.slot_of.container(), self.deferred, slot=self.slot_of)

    def chart(self, fig, key: str) -> None:
        with self.where.container():
            chart(fig, key=key)

    def metric(self, label: str, value: str) -> None:
        self.where.metric(label, value)

    def table(self, columns) -> None:
        self.where.table(columns, border="horizontal")  # a static table: lighter than the data grid

    def caption(self, text: str) -> None:
        self.where.caption(text)

    def info(self, text: str) -> None:
        self.where.info(text)

    def token_chips(self, label: str, tokens) -> None:
        with self.where.container():
            token_chips(label, tokens)

    def text_input(self, field: str, label: str, **kwargs) -> str:
        return view_widget(self.where.text_input, field, label, value=getattr(View, field), **kwargs)

    def slider(self, field: str, label: str, low: int, high: int) -> int:
        return view_widget(self.where.slider, field, label, low, high, value=getattr(View, field))

    def sampling(self) -> None:
        with self.where.container():
            sampling_controls(hugging_face=False)

    def train(self, view: View) -> int | None:
        resolved = models.resolve(replace(view, weights="random"))
        if resolved.model is None:
            self.where.error(tr("error.config", message=literal(error_text(resolved.error))), icon=":material/error:")
            return None
        task = get_task(view.task)
        trained = models.trained_for(view.task)
        if self.where.button(tr("lesson.training.train", steps=view.train_steps), type="primary",
                             key=state.LESSON_TRAIN):  # trained below the step, once its question is on the page
            self.deferred.append(lambda: train_then_rerun(resolved.model, task, view.train_steps))
        else:
            with self.where.container():
                show_result(trained)
        return trained.steps if trained else None

    def training_time(self, view: View) -> tuple[float, float]:
        resolved = models.resolve(replace(view, weights="random"))
        if resolved.model is None:
            return 0.0, 0.0
        cost = trainings.training_cost(resolved.model, view.train_steps, get_task(view.task).train_defaults.batch_size)
        free = cost / COST_PER_CORE_SECOND + EVALUATION_SECONDS
        return free, free * BUSY_SLOWDOWN


def train_then_rerun(model, task, steps: int) -> None:
    """Train a fresh model with the task's own settings, drawing its progress, then show the page with it."""
    run_training(model, task, steps, task.train_defaults.lr, task.train_defaults.batch_size)
    st.rerun()


def _qualified(function) -> str:
    """A module-level function's name, which keys the caches below (Streamlit cannot hash a function)."""
    return f"{function.__module__}.{function.__qualname__}"


@st.cache_data(show_spinner=False, max_entries=256)
def _cached(name: str, args: tuple, _function):
    """_function(*args), computed once for the class (a step's facts that depend on no model); `name` is its key."""
    return _function(*args)


@st.cache_resource(show_spinner=False, max_entries=64)
def _shared_figure(name: str, args: tuple, kwargs: tuple, lang: str, _builder):
    """_builder(*args, lang=lang, **kwargs), built once for the class and never mutated; `name` is its key."""
    return figure_cache.shared(_builder(*args, lang=lang, **dict(kwargs)))


def setup_values(step: Step) -> dict:
    """Every view value a step sets: its own, and the defaults for the rest (the lesson's own fields kept)."""
    defaults = View()
    return {f: getattr(defaults, f) for f in VIEW_FIELDS if f not in KEPT} | dict(step.setup)


def go_to(number: int) -> None:
    """Button and chooser callback: open step `number` (from 1) set up."""
    st.session_state[state.LESSON_STEP] = number
    set_up(number)


def set_up(number: int) -> None:
    st.session_state.update(setup_values(STEPS[number - 1]))
    st.session_state[state.LESSON_SET_UP] = number


def open_in_explorer(page: str) -> None:
    st.session_state[state.GOTO] = page


def set_up_first_visit(number: int) -> None:
    """The first time a session shows the lesson: set the step up, unless its link chose the view itself."""
    if st.session_state.get(state.LESSON_SET_UP) is not None:
        return
    asked = st.session_state.get(state.LINK_ASKED, {})
    st.session_state[state.LESSON_SET_UP] = number
    if not set(asked) - set(KEPT):  # before the sidebar's widgets; what the link chose stays
        values = setup_values(STEPS[number - 1])
        st.session_state[state.PENDING_VIEW] = {f: v for f, v in values.items() if f not in asked}
        st.rerun()


# Streamlit cuts a button's label that does not fit with "…". Where the main column is narrow (150 % zoom, with the
# sidebar open or in presenter mode), Previous and Next keep their arrows and hide their word from the eye, not from
# a screen reader ("Previous" takes 6.2 em with its arrow and padding, in either mode); the step's other buttons
# wrap their words instead.
NAV_BUTTONS = f".st-key-{state.LESSON_PREVIOUS},.st-key-{state.LESSON_NEXT}"
LABEL = "button [data-testid=stMarkdownContainer]"  # a button's words: the step's actions and an answer's choices wrap
ANSWER_KEY = state.ANSWER.format("")  # the beginning of every answer box's key (the step's and the exit ticket's)
# On a phone Streamlit stacks the columns (below 640 px): the question and its answer box first, within a thumb's
# reach, then the step's text, formula and code.
QUESTION_FIRST = f"@media (max-width: 640px){{[data-testid=stColumn]:has(.st-key-{state.LESSON_QUESTION}){{order:-1}}}}"
LESSON_STYLE = (f"<style>{NAV_BUTTONS}{{container-type:inline-size}}"
                f"@container (width < 7em){{:is({NAV_BUTTONS}) {LABEL}{{{VISUALLY_HIDDEN}}}}}"
                f":is(.st-key-{state.LESSON_ACTIONS}, [class*=st-key-{ANSWER_KEY}]) {LABEL}{{white-space:normal}}"
                f"[class*=st-key-{ANSWER_KEY}] button{{height:auto;padding-top:0.2rem;padding-bottom:0.2rem}}"
                f"{QUESTION_FIRST}</style>")


def render() -> None:
    st.html(LESSON_STYLE)
    st.title(tr("lesson.title"))
    number = navigation()
    set_up_first_visit(number)
    step = STEPS[number - 1]
    explain, ask = st.columns([3, 2], gap="large")
    with explain:
        st.markdown(f"### {tr('lesson.step_of', n=number, total=len(STEPS), title=tr(f'lesson.{step.name}.title'))}")
        st.markdown(tr(particular(f"lesson.{step.name}.text", shown_form_words())))
        st.latex(step.formula % tuple(tr(word) for word in step.formula_words))
        show_code([code_excerpt(function, beginnings) for function, beginnings in step.code])
    question_box = ask.container(border=True, key=state.LESSON_QUESTION)
    with ask.container(key=state.LESSON_ACTIONS):
        st.button(tr("lesson.open"), icon=":material/open_in_new:", on_click=open_in_explorer, args=(step.page,))
        st.button(tr("lesson.reset"), icon=":material/restart_alt:", on_click=set_up, args=(number,))
    host = StreamlitHost()
    question = replace(missing_kind(step, number) or step.show(host), step=number)
    ask_and_reveal(question_box, question, number, host)
    if number == len(STEPS):
        exit_ticket(number)
    for work in host.deferred:
        work()


def ask_and_reveal(box, question: Question, number: int, host: StreamlitHost) -> None:
    """The question, its answer box and the reveal. Once revealed (the student's own Reveal, or the teacher's for a
    following student) the step's `reveal` draws the answer's figures: never before (see lessons/question.py)."""
    key = answering.question_key(question)
    box.markdown(f"**{tr('lesson.predict')}:** {question.text}")
    follower = following() is not None
    expander_key = state.LESSON_REVEAL.format(number)
    revealed = answering.shared_reveal(key) if follower else bool(st.session_state.get(expander_key))
    if question.answerable:
        answering.note_asked(key, question)
        if answering.teaching() is None:  # the teacher's screen shows the class's answers instead
            answering.answer_box(box, question, key, locked=revealed)
        else:
            with box:
                answering.live_class(question, key, revealed)
    if follower:
        where = box.container()
        if not revealed:
            where.caption(tr("answers.teacher_reveals"))
    else:  # opening it reruns the page: the step then draws what answers its question
        where = lazy_expander(box, tr("lesson.reveal"), expander_key)
        if revealed and question.answerable:
            answering.reveal_for_room(key)
    if not revealed:
        return
    where.markdown(question.reveal(host))
    said = answering.verdict(question, key)
    if said:
        where.markdown(said)
    if follower and question.answerable:
        with where:
            answering.show_class(question, key, True, chart_key="class_answers_revealed")


def shown_form_words() -> tuple[str, ...]:
    """The catalog suffixes of the shown model's form (a step's text may have its decoder-only variant)."""
    resolved = models.resolve(current_view())
    return () if resolved.model is None else (architecture_of(resolved.model).form.words,)


def missing_kind(step: Step, number: int) -> Question | None:
    """The question saying that the shown model lacks an attention the step's idea needs, with the one click
    that opens the step on an encoder-decoder; None when it has them all (or has no model: the step says why)."""
    resolved = models.resolve(current_view())
    if resolved.model is None:
        return None
    architecture = architecture_of(resolved.model)
    missing = [kind for kind in step.needs if not architecture.form.has_kind(kind)]
    if not missing:
        return None
    said = tr("lesson.needs_kind", kind=tr(f"kind.{missing[0]}"), model=tr(f"architecture.{architecture.form.name}"))
    st.button(tr("lesson.open_encoder_decoder"), icon=":material/swap_horiz:", on_click=set_up, args=(number,),
              key=state.LESSON_ENCODER_DECODER)  # the step's setup: the paper's model, the toy source
    return unasked(said, said)


def navigation() -> int:
    """Previous, the step chooser and Next, always at the top. -> the step shown, from 1."""
    numbers = range(1, len(STEPS) + 1)
    previous, chooser, following = st.columns([1, 4, 1], vertical_alignment="bottom")
    number = view_widget(chooser.segmented_control, state.LESSON_STEP, tr("lesson.step"), numbers, format_func=str,
                         default=View.lesson_step, required=True, help=tr("lesson.steps_help"),
                         on_change=lambda: set_up(st.session_state[state.LESSON_STEP]), label_visibility="collapsed",
                         wrap=True)  # twelve steps: onto a second line where the column is narrow (150 % zoom)
    previous.button(tr("lesson.previous"), icon=":material/arrow_back:", disabled=number == 1, on_click=go_to,
                    args=(number - 1,), width="stretch", key=state.LESSON_PREVIOUS)
    following.button(tr("lesson.next"), icon=":material/arrow_forward:", disabled=number == len(STEPS),
                     on_click=go_to, args=(number + 1,), width="stretch", type="primary", key=state.LESSON_NEXT)
    return number
