"""The shared sidebar: language, model, shape and variants, input; the link is read once and kept in sync."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from transformer_viz import POSITIONAL_ENCODINGS
from transformer_viz.config import divisors
from transformer_viz.figures.common import fill_text
from transformer_viz.tasks import TASKS

from . import services
from .state import LANGUAGES, MASK_VALUES, SHAPE_FIELDS, View
from .text import LANGUAGE_NAMES
from .ui import current_view, tr

D_FF_CHOICES = (16, 32, 64, 128, 256, 512)
VIEW_BACKUP_KEY = "_view_backup"
MAX_LEN_CHOICES = (0, 16, 24, 32, 48, 64)  # 0: the task's own


def load_link_once() -> None:
    """On a session's first run, fill the widgets from the link's query parameters."""
    if "_link_loaded" in st.session_state:
        return
    st.session_state["_link_loaded"] = True
    view, rejected = View.from_params(st.query_params.to_dict())
    if view.task not in TASKS:
        rejected.append("task")
        view = replace(view, task=View.task)
    if not view.src_text and "src_text" not in st.session_state:
        view = replace(view, src_text=TASKS[view.task].examples[0])
    for field, value in view.as_dict().items():
        st.session_state.setdefault(field, value)
    st.session_state["_link_rejected"] = rejected


def on_task_change() -> None:
    st.session_state["src_text"] = TASKS[st.session_state["task"]].examples[0]
    st.session_state["tgt_text"] = ""


def on_shape_change() -> None:
    """A new shape cannot use the pretrained weights (a new mask value can)."""
    if st.session_state.get("weights") == "pretrained" and not services.pretrained_fits(current_view()):
        st.session_state["weights"] = "random"


def back_to_pretrained() -> None:
    config = services.pretrained_config(st.session_state["task"])
    if config is not None:
        for field in SHAPE_FIELDS:
            st.session_state[field] = 0 if field == "max_len" else getattr(config, field)
    st.session_state["weights"] = "pretrained"


def fit_heads_to_d_model() -> None:
    """Offer only divisors of d_model; say so when a link or a d_model change asked for another head count."""
    d_model, heads = st.session_state["d_model"], st.session_state["n_heads"]
    if d_model > 0 and d_model % heads != 0:
        fitting = max(h for h in divisors(d_model) if h <= max(heads, 1))
        st.session_state["n_heads"] = fitting
        st.sidebar.warning(tr("side.heads_fixed", heads=heads, d_model=d_model, fitting=fitting))


def render_sidebar() -> None:
    load_link_once()
    # st.switch_page starts the next run with fresh widget state: put the view back first.
    for field, value in st.session_state.get(VIEW_BACKUP_KEY, {}).items():
        st.session_state.setdefault(field, value)
    if st.session_state.pop("_switch_to_trained", False):
        st.session_state["weights"] = "trained"
    side = st.sidebar
    side.radio(tr("side.language"), LANGUAGES, key="lang", format_func=LANGUAGE_NAMES.get, horizontal=True)

    side.subheader(tr("side.model"))
    side.selectbox(tr("side.task"), list(TASKS), key="task", format_func=lambda n: TASKS[n].title,
                   on_change=on_task_change)
    weights = ["pretrained", "random"] + (["trained"] if services.trained_model() is not None else [])
    if st.session_state.get("weights") not in weights:
        st.session_state["weights"] = "pretrained"
    side.radio(tr("side.weights"), weights, key="weights", format_func=lambda w: tr(f"weights.{w}"))

    with side.expander(tr("side.shape"), expanded=False):
        st.number_input(tr("side.d_model"), min_value=2, max_value=256, step=2, key="d_model",
                        on_change=on_shape_change)
        fit_heads_to_d_model()
        st.selectbox(tr("side.n_heads"), [h for h in divisors(st.session_state["d_model"]) if h <= 16],
                     key="n_heads", on_change=on_shape_change)
        st.slider(tr("side.n_encoder_layers"), 1, 6, key="n_encoder_layers", on_change=on_shape_change)
        st.slider(tr("side.n_decoder_layers"), 1, 6, key="n_decoder_layers", on_change=on_shape_change)
        st.select_slider(tr("side.d_ff"), D_FF_CHOICES, key="d_ff", on_change=on_shape_change)
        st.select_slider(tr("side.max_len"), MAX_LEN_CHOICES, key="max_len", on_change=on_shape_change,
                         format_func=lambda n: tr("side.max_len_task") if n == 0 else str(n))
        st.selectbox(tr("side.positional"), POSITIONAL_ENCODINGS, key="positional",
                     format_func=lambda p: tr(f"positional.{p}"), on_change=on_shape_change)
        st.radio(tr("side.norm_first"), (True, False), key="norm_first", on_change=on_shape_change,
                 format_func=lambda pre: tr("norm.pre" if pre else "norm.post"))
        st.checkbox(tr("side.scale_embeddings"), key="scale_embeddings", on_change=on_shape_change)
        st.checkbox(tr("side.embed_norm"), key="embed_norm", on_change=on_shape_change)
        st.selectbox(tr("side.mask_value"), MASK_VALUES, key="mask_value",
                     format_func=fill_text)
        st.number_input(tr("side.seed"), min_value=0, max_value=9999, step=1, key="seed")
        st.button(tr("side.reset"), on_click=back_to_pretrained, use_container_width=True)

    side.subheader(tr("side.input"))
    side.text_input(tr("side.src_text"), key="src_text")
    examples = TASKS[st.session_state["task"]].examples
    side.pills(tr("side.examples"), examples, key="_example", on_change=use_example, label_visibility="collapsed")
    side.text_input(tr("side.tgt_text"), key="tgt_text")

    st.session_state[VIEW_BACKUP_KEY] = current_view().as_dict()
    side.caption(tr("side.link_help"))
    if st.session_state.get("_link_rejected"):
        side.warning(tr("error.link", names=", ".join(st.session_state["_link_rejected"])))


def use_example() -> None:
    if st.session_state.get("_example"):
        st.session_state["src_text"] = st.session_state["_example"]
        st.session_state["tgt_text"] = ""
        st.session_state["_example"] = None
