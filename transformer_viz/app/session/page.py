"""What every page starts with: the model and run for the current view, or a clear message why not."""

from __future__ import annotations

import functools
import html
import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace

import streamlit as st

from transformer_viz.analysis.architecture import readable_target
from transformer_viz.analysis.inference import TextRun
from transformer_viz.app.server import checkpoints, figure_cache, models, state
from transformer_viz.app.server.server_log import log_once
from transformer_viz.app.server.state import View
from transformer_viz.app.session.charts import figure_min_font
from transformer_viz.app.session.widgets import clamped_index, current_view, view_widget
from transformer_viz.app.session.words import error_text, lang, literal, tr
from transformer_viz.trace.form import FORMS, form_of
from transformer_viz.weights.architectures import architecture_of
from transformer_viz.weights.pretrained import pretrained_name

SPECIAL_STYLE = {"<pad>": "pad", "<bos>": "bos", "<eos>": "eos", "<unk>": "unk"}
CHIP_CSS = """<style>
.tv-chips{display:flex;flex-wrap:wrap;gap:4px;margin:0 0 4px 0;align-items:center}
.tv-chips .lbl{font-size:0.85rem;color:#555;margin-right:4px;min-width:6.5rem}
.tv-chip{display:inline-flex;align-items:baseline;gap:3px;padding:1px 7px;border-radius:7px;
  background:#eef1f8;border:1px solid #c9d1e6;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:1rem}
.tv-chip sub{font-size:0.65rem;color:#555;font-family:sans-serif}
.tv-chip.pad{background:#e6e6e6;color:#555;border-style:dashed}
.tv-chip.bos{background:#e3f4e8;border-color:#5fb37a}
.tv-chip.eos{background:#fdebd9;border-color:#e08a3a}
.tv-chip.unk{background:#fde2e2;border-color:#d9534f;color:#a12622;font-weight:600}
</style>"""


@dataclass(frozen=True)
class PageContext:
    view: View
    resolved: models.Resolved
    run: TextRun
    pad_to: int = 0

    @property
    def run_key(self) -> tuple:
        """What identifies this run (and the model behind it) in the figure cache."""
        return (self.resolved.model_id, self.view.task, self.view.src_text, self.view.tgt_text, self.pad_to,
                self.run.sampling)

    def figure(self, builder, *args, **kwargs):
        """builder(self.trace, *args, lang=<the session's language>, **kwargs), cached for this run and
        language (see figure_cache.figure); `min_font=` the session's too when the builder takes one."""
        return figure_cache.figure(self.run_key, self.trace, builder, *args, lang=lang(),
                                   **with_min_font(builder, kwargs))

    def figures(self, builder, *args, **kwargs):
        """builder(self, *args, lang=<the session's language>, **kwargs): figures drawn from more than the trace
        (the model, the greedy steps), cached like `figure`. `builder` is a module-level function."""
        return figure_cache.figure(self.run_key, self, builder, *args, lang=lang(), **with_min_font(builder, kwargs))

    @property
    def trace(self):
        return self.run.trace

    @property
    def model(self):
        return self.resolved.model

    @property
    def architecture(self):
        """What the model is and can do (analysis/architecture.py): every page asks it, none branches on it."""
        return architecture_of(self.resolved.model)


def with_min_font(builder, kwargs: dict) -> dict:
    """`kwargs` with `min_font=figure_min_font()` (larger in presenter mode) when `builder` takes a `min_font`
    keyword and none was given: part of the figure's key in the shared cache, so a projector's figure is its own."""
    if "min_font" in kwargs or not takes_min_font(builder):
        return kwargs
    return {**kwargs, "min_font": figure_min_font()}


@functools.cache
def takes_min_font(builder) -> bool:
    """Whether `builder` (a module-level function) has a `min_font` keyword."""
    parameter = inspect.signature(builder).parameters.get("min_font")
    return parameter is not None and parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD)


def token_chips(label: str, tokens) -> None:
    """Tokens as chips with their positions; <pad>, <bos>, <eos>, <unk> each look different."""
    chips = "".join(
        f'<span class="tv-chip {SPECIAL_STYLE.get(token, "")}">{html.escape(token if token != " " else "␣")}'
        f"<sub>{position}</sub></span>"
        for position, token in enumerate(tokens)
    )
    st.html(f'{CHIP_CSS}<div class="tv-chips"><span class="lbl">{html.escape(label)}</span>{chips}</div>')


def weights_banner(view: View, resolved: models.Resolved) -> None:
    if resolved.weights == "hf":
        st.caption(hugging_face_banner(resolved.model.config))
    elif resolved.weights == "random":
        st.warning(tr("banner.random"), icon=":material/casino:")
        if resolved.note:  # why: in the server's log (it names the server's paths and commands)
            log_once(f"weights {view.weights!r} of {view.task!r} could not be loaded: {resolved.note}")
            st.caption(tr("error.checkpoint"))
        elif checkpoints.checkpoint_name(view.weights) is not None:  # a link with another shape
            st.caption(tr("banner.checkpoint_shape", name=checkpoints.checkpoint_name(view.weights)))
    elif resolved.weights == "trained":
        trained = models.trained_for(view.task)
        key = "banner.uploaded" if trained.uploaded else "banner.trained"
        st.info(tr(key, steps=trained.steps, task=tr(f"task.{trained.task}"), name=trained.uploaded),
                icon=":material/fitness_center:")
    else:
        name = checkpoints.checkpoint_name(resolved.weights)
        extra = checkpoints.find(name) if name is not None else None
        shipped = models.shipped(pretrained_name(view.task, view.architecture)) if name is None else None
        loaded = shipped if name is None else extra.loaded if extra is not None else None
        exact = (loaded.metrics if loaded is not None else {}).get("exact_match")
        metric = tr("banner.metric", exact=exact) if isinstance(exact, float) else tr("banner.unmeasured")
        key = "banner.pretrained" + FORMS[view.architecture].words if name is None else "banner.checkpoint"
        st.caption(tr(key, task=tr(f"task.{view.task}"), metric=metric, name=name))


def hugging_face_banner(config) -> str:
    """What a Hugging Face model is: its name, family and shape; what a decoder-only one shares and how the Llama
    layout differs from the diagram; how T5 scores."""
    if not form_of(config).one_stream:
        text = tr("banner.hf", name=literal(config.name), family=config.family, layers=config.n_encoder_layers,
                  decoder_layers=config.n_decoder_layers, heads=config.n_heads, d_model=config.d_model)
        return text + (" " + tr("banner.hf_t5") if config.family == "t5" else "")
    parts = [tr("banner.hf_decoder_only", name=literal(config.name), family=config.family,
                layers=config.n_decoder_layers, heads=config.n_heads, d_model=config.d_model)]
    if config.n_kv_heads < config.n_heads:
        parts.append(tr("banner.hf_gqa", heads=config.n_heads, kv_heads=config.n_kv_heads,
                        group=config.n_heads // config.n_kv_heads))
    if config.norm == "rms_norm":
        parts.append(tr("banner.hf_llama"))
    return " ".join(parts)


def toy_only() -> bool:
    """A page that trains, changes or compares a toy model's weights: with a Hugging Face model chosen it says so.
    True when the page must stop there."""
    if current_view().source != "hf":
        return False
    st.info(tr("hf.toy_only"), icon=":material/info:")
    return True


def shown_model() -> tuple[View, models.Resolved] | None:
    """The preamble of a page that shows a model: the view, its model resolved and named in the weights banner;
    on a problem, say it in the page and return None."""
    view = current_view()
    resolved = models.resolve(view)
    if resolved.error:
        st.error(tr("error.config", message=literal(error_text(resolved.error))), icon=":material/error:")
        return None
    weights_banner(view, resolved)
    return view, resolved


def page_context(show_tokens: bool = True, pad_to: int = 0, teacher_forced: bool = False) -> PageContext | None:
    """Resolve the view's model and run its input; on a problem, say it in the page and return None.

    `pad_to` pads the input with <pad> to that length (the Masks page uses it to show padding);
    `teacher_forced` feeds the decoder a target even when none was typed: the model's own greedy output,
    as a training batch would hold the answer (so the target is padded too).
    """
    shown = shown_model()
    if shown is None:
        return None
    view, resolved = shown
    try:
        if teacher_forced and not view.tgt_text:
            greedy = replace(view, temperature=0.0)  # a sampled output may hold <pad> or <bos> anywhere
            view = replace(view, tgt_text=readable_target(
                architecture_of(resolved.model).tasks().get(view.task), models.run(greedy, resolved).output_text))
        run = models.run(view, resolved, pad_to)
    except ValueError as error:
        st.error(tr("error.input", message=literal(error_text(error))), icon=":material/error:")
        return None
    if run.unknown:
        st.warning(tr("warn.unknown", tokens=", ".join(map(literal, dict.fromkeys(run.unknown)))),
                   icon=":material/help:")
    if show_tokens:
        source, target = st.columns(2)
        form = run.trace.form  # a decoder-only model reads no source: its prompt begins its one stream
        with source:
            token_chips(tr(f"tokens.{form.input_name}"), form.input_tokens(run.trace, run.prompt_len) or ())
        with target:
            if run.teacher_forced:
                token_chips(tr(f"tokens.{form.forced_name}"), form.forced_tokens(run.trace, run.prompt_len) or ())
            else:
                token_chips(tr("tokens.output"), run.output_tokens)
    return PageContext(view, resolved, run, pad_to)


def attention_selectors(trace, kind_column, layer_column, head_column, kind_field: str = state.KIND,
                        on_kind_change: Callable | None = None) -> tuple[str, int, int]:
    """The kind, layer and head choosers every attention page shares (one view field each; the Masks page
    has its own kind field). `on_kind_change` runs when the kind really changes."""
    kinds = trace.attention_kinds()  # a decoder-only model: its self-attention alone
    kind = view_widget(kind_column.selectbox, kind_field, tr("attention.kind"), kinds,
                       index=kinds.index(default_kind(kinds, kind_field)), on_change=on_kind_change)
    return kind, *layer_and_head(trace, kind, layer_column, head_column)


def default_kind(kinds: tuple[str, ...], kind_field: str = state.KIND) -> str:
    """The view's default kind where the model has it, else its first."""
    default = getattr(View, kind_field)
    return default if default in kinds else kinds[0]


def chosen_kind(trace, kind_field: str = state.KIND) -> str:
    """The attention kind the session chose, as `attention_selectors` shows it, for a part of a page drawn
    apart from the selectors (a fragment of its own)."""
    kinds = trace.attention_kinds()
    chosen = st.session_state.get(kind_field)
    return chosen if chosen in kinds else default_kind(kinds, kind_field)


def layer_and_head(trace, kind: str, layer_column, head_column) -> tuple[int, int]:
    """Layer and head of one attention kind; their options follow the model, their values the view."""
    layers, heads = range(trace.n_layers(kind)), range(trace.config.n_heads)
    layer = view_widget(layer_column.selectbox, state.LAYER, tr("attention.layer"), layers,
                        index=clamped_index(View.layer, len(layers)))
    head = view_widget(head_column.selectbox, state.HEAD, tr("attention.head"), heads,
                       index=clamped_index(View.head, len(heads)))
    return layer, head


def cell_selectors(query_tokens, key_tokens, query_column, key_column,
                   optional: bool = False) -> tuple[int | None, int | None]:
    """The cell (query, key) shown in detail; Attention and Inside one head share it.

    `optional`: the cell may be unchosen (None, None), until a click or these selectors choose one.
    """
    if not optional:
        for field in (state.CELL_QUERY, state.CELL_KEY):
            if field in st.session_state and st.session_state[field] is None:
                st.session_state[field] = 0
    first = [None] if optional else []

    def label(tokens):
        return lambda i: tr("attention.no_cell") if i is None else f"{i}: {tokens[i]}"

    query = view_widget(query_column.selectbox, state.CELL_QUERY, tr("attention.cell_query"),
                        [*first, *range(len(query_tokens))], format_func=label(query_tokens), on_change=pair_cell,
                        args=(state.CELL_QUERY, state.CELL_KEY))
    key = view_widget(key_column.selectbox, state.CELL_KEY, tr("attention.key"), [*first, *range(len(key_tokens))],
                      format_func=label(key_tokens), on_change=pair_cell, args=(state.CELL_KEY, state.CELL_QUERY))
    return (query, key) if query is not None and key is not None else (None, None)


def pair_cell(changed: str, other: str) -> None:
    """A cell is chosen whole: choosing its query or key starts the other at 0; unchoosing one unchooses both."""
    if st.session_state[changed] is None:
        st.session_state[other] = None
    elif st.session_state.get(other) is None:
        st.session_state[other] = 0


def bar_vocab(ctx: PageContext):
    """The tokens the bars name: the model's output vocabulary (a Hugging Face model's tokenizer's, a toy model's
    task's: one stream's or the target's)."""
    return ctx.architecture.output_vocab(ctx.model, ctx.architecture.tasks().get(ctx.view.task))


def choose_step(count: int, label: str = "decoding.step", field: str = state.STEP,
                count_key: str = state.STEP_COUNT, own: Callable[[], int] | None = None) -> int:
    """The step shown (Decoding; with `field` OUTPUT, the output token explained), from 1 to `count`, on a slider
    named by catalog key `label`: the one chosen, else the page's own choice `own()` (without it, the last). One
    step needs no slider. Each page keeps its own field: two sliders sharing one key clashed on a direct switch
    between their pages."""
    if count == 1:
        st.caption(tr("decoding.one_step"))
        return 1
    shown = st.session_state.get(field, getattr(View, field))
    if not 1 <= shown <= count:  # 0 (the view's default) or beyond a shorter output: the page's own choice
        st.session_state[field] = count if own is None else own()
    elif st.session_state.get(count_key) != count:
        # A new count makes a new slider, which would take the value code set last (the lesson's 0), not the
        # shown one. Written only then: a written value is sent to the browser and would undo a key press.
        st.session_state[field] = shown
    st.session_state[count_key] = count
    return view_widget(st.slider, field, tr(label), 1, count, value=count)
