"""Lesson page: nine steps a teacher runs without preparation, each set up on the live model.

A step sets the view (task, input, kind, layer, head...) for the point it makes, explains it with a
formula and live figures, asks a question to predict and reveals the answer computed from the model.
The view stays in the sidebar and the link: students may change it, and the answer follows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np
import streamlit as st

from transformer_viz.analysis.inference import next_token_probabilities
from transformer_viz.app.pages.embeddings import curves_figure, similarity_figure
from transformer_viz.app.pages.masks import MASK_WIDTH
from transformer_viz.app.pages.training import run_training, show_result
from transformer_viz.app.server import services
from transformer_viz.app.session import state
from transformer_viz.app.session.page import PageContext, page_context, token_chips
from transformer_viz.app.session.state import VIEW_FIELDS, View
from transformer_viz.app.session.widgets import (
    MAIN_WIDTH,
    MAX_MAIN_WIDTH,
    chart,
    clamped_index,
    current_view,
    error_text,
    lang,
    literal,
    tr,
    view_widget,
)
from transformer_viz.data.bpe import learn_bpe
from transformer_viz.data.tasks import TASKS, model_config_for
from transformer_viz.figures.attention import attention_lines
from transformer_viz.figures.decoding import cross_attention_by_step, topk_bars
from transformer_viz.figures.embeddings import embedding_pipeline
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.lesson import softmax_entropy_figure
from transformer_viz.figures.masks import mask_figures, masking_steps
from transformer_viz.figures.tokens import bpe_figure
from transformer_viz.lessons.facts import (
    blocked_by_padding_only,
    equal_token_rows,
    head_patterns,
    mirror_mass,
    shuffle_difference,
    softmax_entropy,
    strongest_key,
)

FRENCH = TASKS["en-fr"].examples[0]  # "the black cat sees the small dog"
CHINESE = TASKS["en-zh"].examples[0]  # "he ate an apple at school yesterday"
# What a step never changes: the language, presenter mode, the lesson itself, and the fields whose view default
# means "the page's own choice", which only their widgets know: the task's learning rate and batch on Training,
# a few telling dimensions on Embeddings (written as such, an empty selection would not even fit in a link).
KEPT = (state.LANG, state.PRESENT, state.LESSON_STEP, state.BPE_CORPUS, state.BPE_MERGES, state.TRAIN_LR,
        state.TRAIN_BATCH, state.DIMS)
MAX_MERGES = 30
D_KS = (2, 4, 8, 16, 32, 64, 128, 256, 512)
ASKED_D_K, N_KEYS = 256, 8
LESSON_TRAIN_STEPS = 400

# Each step's formula (LaTeX: the same in every language; the masks' two words are filled in).
FORMULAS = {
    "tokens": r"(a,b)^{*}=\arg\max_{(a,b)}\ \sum_{w}\mathrm{count}(w)\cdot\#_{(a,b)}(w)",
    "embeddings": r"x_i = E[t_i] + PE_i",
    # Two lines where two formulas would be wider than the text column on a projector.
    "positions": r"\begin{aligned}PE_{(pos,\,2i)}&=\sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)\\ "
                 r"PE_{(pos,\,2i+1)}&=\cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)\end{aligned}",
    "scaling": r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^{\top}}{\sqrt{d_k}}\right)V",
    "masks": r"\begin{gathered}S=\frac{QK^{\top}}{\sqrt{d_k}},\qquad \mathrm{softmax}(\tilde S)\\ "
             r"\tilde S_{ij}=\begin{cases}S_{ij} & \text{%s}\\ -10^{9} & \text{%s}\end{cases}\end{gathered}",
    "heads": r"\begin{aligned}\mathrm{MultiHead}(Q,K,V)&=\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)"
             r"\,W^{O}\\ \mathrm{head}_j&=\mathrm{Attention}(QW_j^{Q},KW_j^{K},VW_j^{V})\end{aligned}",
    "cross": r"\mathrm{softmax}\!\left(\frac{Q_{\mathrm{dec}}K_{\mathrm{enc}}^{\top}}{\sqrt{d_k}}\right)"
             r"V_{\mathrm{enc}}",
    "decoding": r"y_t=\arg\max_{w}\ P(w\mid y_{<t},\,x)",
    "training": r"\mathcal{L}=-\frac{1}{T}\sum_{t=1}^{T}\log P(y_t\mid y_{<t},\,x)",
}


@dataclass(frozen=True)
class Step:
    name: str
    page: str  # the explorer page that shows this view
    setup: dict = field(default_factory=dict)  # view values beyond View's defaults


STEPS = (
    Step("tokens", "embeddings", {state.TASK: "en-fr", state.SRC_TEXT: FRENCH}),
    Step("embeddings", "embeddings", {state.SRC_TEXT: "hello"}),
    Step("positions", "embeddings", {state.SRC_TEXT: "hello"}),
    Step("scaling", "head", {state.SRC_TEXT: "hello", state.KIND: "encoder_self", state.LAYER: 0}),
    Step("masks", "masks", {state.SRC_TEXT: "hello", state.TGT_TEXT: "olleh", state.PAD: 8,
                            state.KIND: "decoder_self", state.LAYER: 0}),
    Step("heads", "attention", {state.TASK: "en-fr", state.SRC_TEXT: FRENCH, state.KIND: "decoder_self",
                                state.HEAD: 1}),
    Step("cross", "attention", {state.TASK: "en-fr", state.SRC_TEXT: FRENCH, state.KIND: "cross", state.HEAD: 1}),
    Step("decoding", "decoding", {state.TASK: "en-fr", state.SRC_TEXT: FRENCH, state.STEP: 3, state.HEAD: 1}),
    Step("training", "training", {state.SRC_TEXT: "hello", state.WEIGHTS: "random",
                                  state.TRAIN_STEPS: LESSON_TRAIN_STEPS}),
)


def setup_values(step: Step) -> dict:
    """Every view value a step sets: its own, and the defaults for the rest (the lesson's own fields kept)."""
    defaults = View()
    return {f: getattr(defaults, f) for f in VIEW_FIELDS if f not in KEPT} | step.setup


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
    if not set(asked) - set(KEPT):
        st.session_state[state.PENDING_VIEW] = setup_values(STEPS[number - 1])  # before the sidebar's widgets
        st.rerun()


def render() -> None:
    st.title(tr("lesson.title"))
    number = navigation()
    set_up_first_visit(number)
    step = STEPS[number - 1]
    explain, ask = st.columns([3, 2], gap="large")
    with explain:
        st.markdown(f"### {tr('lesson.step_of', n=number, total=len(STEPS), title=tr(f'lesson.{step.name}.title'))}")
        st.markdown(tr(f"lesson.{step.name}.text"))
        formula = FORMULAS[step.name]
        if step.name == "masks":
            formula %= (tr("lesson.masks.allowed"), tr("lesson.masks.blocked"))
        st.latex(formula)
    question_box = ask.container(border=True)
    with ask:
        st.button(tr("lesson.open"), icon=":material/open_in_new:", on_click=open_in_explorer, args=(step.page,))
        st.button(tr("lesson.reset"), icon=":material/restart_alt:", on_click=set_up, args=(number,))
    question, answer = BODIES[step.name]()
    with question_box:
        st.markdown(f"**{tr('lesson.predict')}:** {question}")
        with st.expander(tr("lesson.reveal"), key=state.LESSON_REVEAL.format(number)):
            st.markdown(answer)


def navigation() -> int:
    """Previous, the step chooser and Next, always at the top. -> the step shown, from 1."""
    numbers = range(1, len(STEPS) + 1)
    previous, chooser, following = st.columns([1, 4, 1], vertical_alignment="bottom")
    number = view_widget(chooser.segmented_control, state.LESSON_STEP, tr("lesson.step"), numbers, format_func=str,
                         default=View.lesson_step, required=True, help=tr("lesson.steps_help"),
                         on_change=lambda: set_up(st.session_state[state.LESSON_STEP]), label_visibility="collapsed")
    previous.button(tr("lesson.previous"), icon=":material/arrow_back:", disabled=number == 1, on_click=go_to,
                    args=(number - 1,), width="stretch", key=state.LESSON_PREVIOUS)
    following.button(tr("lesson.next"), icon=":material/arrow_forward:", disabled=number == len(STEPS),
                     on_click=go_to, args=(number + 1,), width="stretch", type="primary", key=state.LESSON_NEXT)
    return number


def not_here(why: str) -> str:
    return tr("lesson.not_here", why=why)


def tokens() -> tuple[str, str]:
    ctx = page_context(show_tokens=False)
    if ctx is not None:
        text = ctx.view.src_text
        token_chips(tr("lesson.tokens.characters"), [c for c in text])
        token_chips(tr("lesson.tokens.words"), text.split())
        token_chips(tr("lesson.tokens.model"), ctx.trace.src_tokens)
    corpus_column, merges_column = st.columns([3, 1])
    corpus = view_widget(corpus_column.text_input, state.BPE_CORPUS, tr("lesson.tokens.corpus"), max_chars=2000,
                         value=View.bpe_corpus)
    merges = view_widget(merges_column.slider, state.BPE_MERGES, tr("lesson.tokens.merges"), 0, MAX_MERGES,
                         value=View.bpe_merges)
    question = tr("lesson.tokens.question")
    learned = learned_bpe(corpus)
    if learned is None or not learned.merges:
        st.info(tr("lesson.tokens.empty"))
        return question, tr("lesson.tokens.empty")
    chart(bpe_chart(corpus, merges, lang()), key="lesson_bpe")
    left, right, count = learned.merges[0]
    return question, tr("lesson.tokens.answer", left=literal(left), right=literal(right), count=count)


@st.cache_resource(show_spinner=False, max_entries=64)
def bpe_chart(corpus: str, merges: int, lang: str):
    """The BPE figure of a corpus with merges (one that has some), shared by the class (never mutated)."""
    learned = learned_bpe(corpus)
    return services.shared(bpe_figure(learned, min(merges, len(learned.merges)), lang=lang, width=MAIN_WIDTH))


@st.cache_data(show_spinner=False, max_entries=256)
def learned_bpe(corpus: str):
    """The merges of a corpus typed as words separated by spaces (None: no word)."""
    counts = Counter(corpus.split())
    return learn_bpe(dict(counts), MAX_MERGES) if counts else None


def embeddings() -> tuple[str, str]:
    ctx = page_context()
    question = tr("lesson.embeddings.question")
    if ctx is None:
        return question, ""
    chart(ctx.figure(embedding_pipeline, "src"), key="lesson_pipeline")
    tokens_ = ctx.trace.src_tokens
    if len(tokens_) < 4 or tokens_[2] != tokens_[3]:
        return question, not_here(tr("lesson.embeddings.why"))
    token, total = equal_token_rows(ctx.trace, 2, 3)
    return question, tr("lesson.embeddings.answer", token=token, total=total)


def positions() -> tuple[str, str]:
    ctx = page_context()
    view = current_view()
    text, backwards = view.src_text, view.src_text[::-1]
    question = tr("lesson.positions.question", text=literal(text), shuffled=literal(backwards))
    if ctx is None:
        return question, ""
    task = TASKS[view.task]
    order = list(range(len(task.split(text))))[::-1]
    shape = view.shape() | {"d_model": view.d_model + view.d_model % 2}  # sinusoidal needs an even width
    differences = {p: shuffle_difference(services.random_model(model_config_for(task, **shape | {"positional": p}),
                                                               view.seed), task, text, order)
                   for p in ("none", "sinusoidal")}
    none_column, sine_column = st.columns(2)
    none_column.metric(tr("lesson.positions.none"), f"{differences['none']:.1e}")
    sine_column.metric(tr("lesson.positions.sinusoidal"), f"{differences['sinusoidal']:.2f}")
    curves, similarity = st.columns(2)
    with curves:
        d = ctx.trace.config.d_model
        chart(ctx.figure(curves_figure, "src", tuple(sorted({0, 1, d // 2, d - 1}))), key="lesson_curves")
    with similarity:
        chart(ctx.figure(similarity_figure, "src"), key="lesson_similarity")
    return question, tr("lesson.positions.answer", **differences)


@st.cache_data(show_spinner=False)
def entropies() -> tuple[np.ndarray, np.ndarray]:
    return softmax_entropy(D_KS, N_KEYS, scaled=True), softmax_entropy(D_KS, N_KEYS, scaled=False)


@st.cache_resource(show_spinner=False)
def entropy_chart(lang: str):
    """The entropies of the scaled and unscaled softmax by d_k (the same for every view; never mutated)."""
    return services.shared(softmax_entropy_figure(D_KS, *entropies(), N_KEYS, lang=lang))


def scaling() -> tuple[str, str]:
    scaled, unscaled = entropies()
    chart(entropy_chart(lang()), key="lesson_entropy")
    at = D_KS.index(ASKED_D_K)
    return (tr("lesson.scaling.question", d_k=ASKED_D_K, n_keys=N_KEYS),
            tr("lesson.scaling.answer", unscaled=2 ** unscaled[at], bits_unscaled=unscaled[at],
               scaled=2 ** scaled[at], bits_scaled=scaled[at], n_keys=N_KEYS, uniform=np.log2(N_KEYS)))


def masks() -> tuple[str, str]:
    view = current_view()
    ctx = page_context(pad_to=view.pad)
    question = tr("lesson.masks.question", length=view.pad)
    if ctx is None:
        return question, ""
    figures = ctx.figure(mask_figures, width=MASK_WIDTH)
    for column, (title, fig) in zip(st.columns(len(figures)), figures.items(), strict=True):
        with column:
            chart(fig, key=f"lesson_mask_{title}")
    layer = clamped_index(view.layer, ctx.trace.n_layers("decoder_self"))
    head = clamped_index(view.head, ctx.trace.config.n_heads)
    chart(ctx.figure(masking_steps, "decoder_self", layer, head, width=MAIN_WIDTH, max_width=MAX_MAIN_WIDTH),
          key="lesson_masking_steps")
    pads = ctx.trace.tgt_tokens.count("<pad>")
    if ctx.run.teacher_forced is False or not pads:
        return question, not_here(tr("lesson.masks.why"))
    return question, tr("lesson.masks.answer", n=blocked_by_padding_only(ctx.trace), pads=pads)


def layer_head(ctx: PageContext, kind: str) -> tuple[int, int]:
    return (clamped_index(ctx.view.layer, ctx.trace.n_layers(kind)),
            clamped_index(ctx.view.head, ctx.trace.config.n_heads))


def heads() -> tuple[str, str]:
    ctx = page_context()
    if ctx is None:
        return tr("lesson.heads.question", layer="?"), ""
    layer, head = layer_head(ctx, "decoder_self")
    question = tr("lesson.heads.question", layer=layer + 1)
    grid = ctx.figure(attention_grid, "decoder_self", "weights", width=MAIN_WIDTH, highlight=(layer, head))
    chart(grid, key="lesson_grid")
    patterns = head_patterns(ctx.trace, "decoder_self", layer)
    st.table({tr("lesson.heads.table_head"): [str(h + 1) for h in range(ctx.trace.config.n_heads)]}
             | {tr(f"lesson.heads.{p}"): [f"{v:.0%}" for v in patterns[p]] for p in patterns}, border="horizontal")
    best = int(patterns["previous"].argmax())
    others = ", ".join(f"{h + 1}: {v:.0%}" for h, v in enumerate(patterns["previous"]) if h != best)
    return question, tr("lesson.heads.answer", head=best + 1, previous=patterns["previous"][best], others=others)


def writer_row(ctx: PageContext, target: str) -> int | None:
    """The decoder row that writes `target` (row i reads target position i and predicts position i + 1)."""
    written = ctx.run.output_tokens if not ctx.run.teacher_forced else ctx.trace.tgt_tokens[1:]
    return written.index(target) if target in written else None


def cross() -> tuple[str, str]:
    ctx = page_context()
    if ctx is None:
        return tr("lesson.cross.question", layer="?", head="?", target="noir"), ""
    layer, head = layer_head(ctx, "cross")
    question = tr("lesson.cross.question", layer=layer + 1, head=head + 1, target="noir")
    french, chinese = st.columns(2, gap="large")
    with french:
        chart(ctx.figure(attention_lines, "cross", layer, head), key="lesson_lines")
    zh_view = replace(ctx.view, task="en-zh", src_text=CHINESE, tgt_text="", weights="pretrained")
    zh_resolved = services.resolve(zh_view)
    zh_run = services.run(zh_view, zh_resolved) if zh_resolved.model is not None else None
    with chinese:
        if zh_run is not None:
            st.caption(tr("lesson.cross.zh", text=literal(CHINESE)))
            zh_layer = min(layer, zh_run.trace.n_layers("cross") - 1)
            zh_head = min(head, zh_run.trace.config.n_heads - 1)
            chart(attention_lines(zh_run.trace, "cross", zh_layer, zh_head, lang=lang()), key="lesson_lines_zh")
    row = writer_row(ctx, "noir")
    if row is None or zh_run is None or "昨天" not in zh_run.output_tokens:
        return question, not_here(tr("lesson.cross.why", target="noir"))
    zh_row = zh_run.output_tokens.index("昨天")
    return question, tr(
        "lesson.cross.answer", word=ctx.trace.src_tokens[strongest_key(ctx.trace, "cross", layer, head, row)],
        row=row, row_token=ctx.trace.tgt_tokens[row], zh_target="昨天",
        zh_word=zh_run.trace.src_tokens[strongest_key(zh_run.trace, "cross", zh_layer, zh_head, zh_row)])


def decoding() -> tuple[str, str]:
    ctx = page_context()
    if ctx is None or ctx.run.teacher_forced:
        return tr("lesson.decoding.question", prefix="…"), not_here(tr("lesson.decoding.why", steps=2))
    k = min(max(ctx.view.step, 1), ctx.run.n_steps) - 1  # the step shown, from 0
    trace = ctx.run.step(k)
    question = tr("lesson.decoding.question", prefix=literal(" ".join(trace.tgt_tokens)))
    layer, head = layer_head(ctx, "cross")
    vocab = TASKS[ctx.view.task].tgt_vocab
    probabilities = next_token_probabilities(trace)
    bars, steps = st.columns([2, 3], gap="large")
    with bars:
        chart(topk_bars(probabilities, vocab.tokens, k=5, chosen=int(probabilities.argmax()), lang=lang()),
              key="lesson_topk")
    with steps:
        chart(cross_attention_by_step([ctx.run.step(i) for i in range(k + 1)], layer, head,
                                      produced=ctx.run.output_tokens[: k + 1], lang=lang()), key="lesson_by_step")
    first, second = np.argsort(probabilities)[::-1][:2]
    return question, tr("lesson.decoding.answer", token=vocab.tokens[first], p=probabilities[first],
                        second=vocab.tokens[second], p2=probabilities[second])


def reverse_mirror(view: View, weights: str) -> float | None:
    """The mirror mass of the last cross-attention layer (mean of heads) with these weights, teacher-forced
    on the right answer; None when they cannot be had."""
    view = replace(view, weights=weights, tgt_text=view.src_text[::-1])
    resolved = services.resolve(view)
    if resolved.model is None or resolved.weights != weights:
        return None
    trace = services.run(view, resolved).trace
    layer = trace.n_layers("cross") - 1
    return float(np.mean([mirror_mass(trace, layer, h) for h in range(trace.config.n_heads)]))


def training() -> tuple[str, str]:
    view = current_view()
    question = tr("lesson.training.question")
    if view.task != "reverse":
        return question, not_here(tr("task.reverse"))
    resolved = services.resolve(replace(view, weights="random"))
    if resolved.model is None:
        st.error(tr("error.config", message=literal(error_text(resolved.error))), icon=":material/error:")
        return question, ""
    task = TASKS[view.task]
    if st.button(tr("lesson.training.train", steps=view.train_steps), type="primary", key=state.LESSON_TRAIN):
        run_training(resolved.model, task, view.train_steps, task.train_defaults.lr, task.train_defaults.batch_size)
        st.rerun()
    show_result(services.trained_for(view.task))
    before, after, shipped = (reverse_mirror(view, w) for w in ("random", "trained", "pretrained"))
    trained = services.trained_for(view.task)
    after_text = tr("lesson.training.not_yet") if after is None else f"{after:.0%}"
    return question, tr("lesson.training.answer", before=before or 0.0, after=after_text, shipped=shipped or 0.0,
                        steps=trained.steps if trained else view.train_steps)


BODIES = {"tokens": tokens, "embeddings": embeddings, "positions": positions, "scaling": scaling, "masks": masks,
          "heads": heads, "cross": cross, "decoding": decoding, "training": training}
