"""The shared sidebar: language, model, shape and variants, input. Every widget is bound to the link."""

from __future__ import annotations

import streamlit as st

from transformer_viz.analysis.architecture import toy_architecture
from transformer_viz.app.server import checkpoints, models, state, trainings
from transformer_viz.app.server.limits import limits
from transformer_viz.app.server.server_log import log_once
from transformer_viz.app.server.state import (
    MASK_VALUES,
    SOURCES,
    View,
    d_ff_choices,
    d_model_range,
    layer_range,
    max_len_choices,
    tasks_for,
)
from transformer_viz.app.session.widgets import (
    Fold,
    callback,
    current_view,
    language_widget,
    relabel_translated,
    restore_choices,
    view_widget,
)
from transformer_viz.app.session.words import literal, tr, weights_label
from transformer_viz.config import ARCHITECTURES, POSITIONAL_ENCODINGS, divisors
from transformer_viz.data.tasks import get_task
from transformer_viz.weights import hf
from transformer_viz.weights.pretrained import pretrained_name

# Inputs offered for a Hugging Face model: translation models read a sentence.
HF_EXAMPLES = ("The cat sat on the mat.", "Attention lets every word look at every other word.")


def on_task_change() -> None:
    st.session_state[state.SRC_TEXT] = get_task(st.session_state[state.TASK]).examples[0]
    st.session_state[state.TGT_TEXT] = ""
    if st.session_state.get(state.WEIGHTS, View.weights) == "pretrained":  # its shape (induction's: rotary)
        back_to_pretrained()


def on_shape_change() -> None:
    """A new shape the chosen weights do not fit (config.fits: a new mask value, the variants of Break it do) shows
    random weights: say so. The model service decides, as for the run that follows (which finds its model cached)."""
    view = current_view()
    if view.weights != "random" and models.resolve_toy(view).weights != view.weights:
        st.session_state[state.WEIGHTS] = "random"
        st.session_state[state.WEIGHTS_LOST] = view.weights


@callback
def back_to_pretrained() -> None:
    """The shipped model's shape and weights (a shape beyond this server's limits is left as it is)."""
    task_name = st.session_state[state.TASK]
    config = models.pretrained_config(pretrained_name(task_name, current_view().architecture))
    if config is not None:
        st.session_state.update(checkpoints.view_shape(config, task_name) or {})
    st.session_state[state.WEIGHTS] = "pretrained"


def use_example() -> None:
    if st.session_state.get(state.EXAMPLE):
        st.session_state[state.SRC_TEXT] = st.session_state[state.EXAMPLE]
        st.session_state[state.TGT_TEXT] = ""
        st.session_state[state.EXAMPLE] = None


def fit_heads_to_d_model() -> None:
    """Offer only divisors of d_model; say so when a link or a d_model change asked for another head count."""
    d_model = st.session_state.get(state.D_MODEL, View.d_model)
    heads = st.session_state.get(state.N_HEADS, View.n_heads)
    if not 1 <= heads <= limits().heads:
        return  # no head count this server builds: its widget shows the default (and the link's notice says so)
    if d_model % heads != 0:
        fitting = max(h for h in divisors(d_model) if h <= heads)
        st.session_state[state.N_HEADS] = fitting
        st.sidebar.warning(tr("side.heads_fixed", heads=heads, d_model=d_model, fitting=fitting))


def render_sidebar() -> None:
    restore_choices()  # before any widget
    trainings.collect_training()
    pending = st.session_state.pop(state.PENDING_WEIGHTS, None)
    if pending is not None:
        st.session_state[state.WEIGHTS] = pending
    side = st.sidebar
    language_widget(side, tr("side.language"), on_change=relabel_translated)
    view_widget(side.toggle, state.PRESENT, tr("side.present"))

    side.subheader(tr("side.model"))
    view_widget(side.radio, state.SOURCE, tr("side.source"), SOURCES, horizontal=True)
    if st.session_state[state.SOURCE] == "hf":
        hugging_face_controls(side)
    else:
        toy_model_controls(side)

    side.subheader(tr("side.input"))
    view_widget(side.text_input, state.SRC_TEXT, tr("side.src_text"))
    view = current_view()
    examples = HF_EXAMPLES if view.source == "hf" else get_task(view.task).examples
    side.pills(tr("side.examples"), examples, key=state.EXAMPLE, on_change=use_example, label_visibility="collapsed")
    view_widget(side.text_input, state.TGT_TEXT, tr("side.tgt_text"))
    side.caption(tr("side.link_help"))


def start_with(example: str) -> None:
    """A session opened without an input starts with an example (of its task, or for a Hugging Face model)."""
    if state.SRC_TEXT not in st.session_state:
        st.session_state[state.SRC_TEXT] = example


def toy_model_controls(side) -> None:
    """A task's model: the task, its weights, and the shape and variants of a fresh one."""
    view_widget(side.radio, state.ARCHITECTURE, tr("side.architecture"), ARCHITECTURES,
                help=tr("side.architecture_help"), on_change=on_shape_change)
    tasks = list(tasks_for(st.session_state.get(state.ARCHITECTURE, View.architecture)))
    view_widget(side.selectbox, state.TASK, tr("side.task"), tasks, index=tasks.index(View.task),
                on_change=on_task_change)
    weights = ["pretrained", "random"] + (["trained"] if models.trained_for(st.session_state[state.TASK]) else [])
    weights += [extra.weights for extra in checkpoints.usable(st.session_state[state.TASK])]  # extra folders
    start_with(get_task(st.session_state[state.TASK]).examples[0])
    view_widget(side.radio, state.WEIGHTS, tr("side.weights"), weights, on_change=checkpoints.on_weights_change)
    for extra in checkpoints.broken():  # why: in the server's log (it names the server's paths and commands)
        log_once(f"checkpoint {extra.name!r} cannot be used: {extra.error}")
        side.caption(tr("side.checkpoint_broken", name=literal(extra.name)))
    lost = st.session_state.pop(state.WEIGHTS_LOST, None)
    if lost is not None:
        side.warning(tr("side.weights_lost", weights=weights_label(lost)), icon=":material/casino:")

    shape_and_variants(Fold(side, tr("side.shape"), key=state.SHAPE_OPEN))


def shape_and_variants(fold: Fold) -> None:
    """A fresh model's shape and variants, in a fold: most students never open it, and their pages skip its
    thirteen widgets."""
    # Sliders, not number inputs: Streamlit's integer number_input raises on a linked "inf" or "nan".
    fold.widget(st.slider, state.D_MODEL, tr("side.d_model"), *d_model_range(), value=View.d_model, step=2,
                on_change=on_shape_change)
    fit_heads_to_d_model()
    heads = [h for h in divisors(st.session_state.get(state.D_MODEL, View.d_model)) if h <= limits().heads]
    fold.widget(st.selectbox, state.N_HEADS, tr("side.n_heads"), heads, index=heads.index(View.n_heads)
                if View.n_heads in heads else 0, on_change=on_shape_change)
    if "encoder" in toy_architecture(st.session_state[state.ARCHITECTURE]).form.stacks:  # else none offered
        fold.widget(st.slider, state.N_ENCODER_LAYERS, tr("side.n_encoder_layers"), *layer_range(),
                    value=View.n_encoder_layers, on_change=on_shape_change)
    fold.widget(st.slider, state.N_DECODER_LAYERS, tr("side.n_decoder_layers"), *layer_range(),
                value=View.n_decoder_layers, on_change=on_shape_change)
    fold.widget(st.select_slider, state.D_FF, tr("side.d_ff"), d_ff_choices(), value=View.d_ff,
                on_change=on_shape_change)
    fold.widget(st.select_slider, state.MAX_LEN, tr("side.max_len"), max_len_choices(), value=View.max_len,
                on_change=on_shape_change)
    fold.widget(st.selectbox, state.POSITIONAL, tr("side.positional"), POSITIONAL_ENCODINGS,
                on_change=on_shape_change)
    fold.widget(st.radio, state.NORM_FIRST, tr("side.norm_first"), (True, False), on_change=on_shape_change)
    fold.widget(st.checkbox, state.SCALE_EMBEDDINGS, tr("side.scale_embeddings"), on_change=on_shape_change)
    fold.widget(st.checkbox, state.EMBED_NORM, tr("side.embed_norm"), on_change=on_shape_change)
    fold.widget(st.selectbox, state.MASK_VALUE, tr("side.mask_value"), MASK_VALUES)
    fold.widget(st.slider, state.SEED, tr("side.seed"), 0, 9999, value=View.seed)
    if fold.expander.open:
        fold.expander.button(tr("side.reset"), on_click=back_to_pretrained, width="stretch")


def hugging_face_controls(side) -> None:
    """A Hugging Face model (an encoder-decoder, or a decoder-only GPT-2 or Llama layout): a local folder or a name
    in the local cache; downloads only when allowed."""
    view_widget(side.text_input, state.HF_MODEL, tr("side.hf_model"), placeholder="Helsinki-NLP/opus-mt-en-zh")
    if models.hf_downloads_here():
        side.checkbox(tr("side.hf_download"), key=state.HF_DOWNLOAD, help=tr("side.hf_download_help"))
    else:
        side.caption(tr("side.hf_no_downloads"))
    start_with(HF_EXAMPLES[0])
    missing = hf.missing_reason()
    side.caption(tr("side.hf_missing") if missing else tr("side.hf_help"))
