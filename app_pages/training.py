"""Training page: train a copy of the current model on its task, live, then watch attention take shape."""

from __future__ import annotations

import copy
import uuid

import streamlit as st

from transformer_viz.figures.training import attention_animation, loss_curve
from transformer_viz.tasks import TASKS
from transformer_viz.training import evaluate, train

from . import services
from .context import weights_banner
from .ui import chart, current_view, tr

STEP_CHOICES = (100, 200, 400, 800, 1500, 3000)
REDRAW_EVERY = 25


def render() -> None:
    st.title(tr("training.title"))
    st.markdown(tr("training.intro"))
    view = current_view()
    resolved = services.resolve(view)
    if resolved.error:
        st.error(tr("error.config", message=resolved.error), icon=":material/error:")
        return
    weights_banner(view, resolved)
    task = TASKS[view.task]
    defaults = task.train_defaults
    steps_column, lr_column, batch_column = st.columns(3)
    steps = steps_column.select_slider(tr("training.steps"), STEP_CHOICES, value=800, key="training_steps")
    rates = sorted({1e-4, 3e-4, 1e-3, 3e-3, defaults.lr})
    lr = lr_column.select_slider(tr("training.lr"), rates, value=defaults.lr,
                                 format_func=lambda v: f"{v:g}", key="training_lr")
    batch_size = batch_column.select_slider(tr("training.batch"), sorted({16, 32, 64, 128, defaults.batch_size}),
                                            value=defaults.batch_size,
                                            key="training_batch")
    start_column, stop_column = st.columns([1, 5])
    if start_column.button(tr("training.start"), type="primary", key="training_start"):
        # Any click (the Stop button included) interrupts this run; what was trained so far is kept.
        stop_column.button(tr("training.stop"), key="training_stop")
        run_training(resolved.model, task, steps, lr, batch_size)
        st.rerun()
    show_result()


def run_training(model, task, steps: int, lr: float, batch_size: int) -> None:
    """Train a copy of the shared model (never the model itself) and keep it in this session."""
    trained = copy.deepcopy(model)
    entry = {"model": trained, "id": uuid.uuid4().hex, "steps": 0, "history": [], "snapshots": [],
             "task": task.name, "exact": None}
    st.session_state[services.TRAINED_KEY] = entry
    st.session_state["_switch_to_trained"] = True
    progress = st.progress(0.0)
    live_curve = st.empty()

    def on_step(info) -> None:
        entry["steps"] = info.step
        entry["history"].append((info.step, info.loss, info.accuracy))
        if info.snapshot is not None:
            entry["snapshots"].append(info.snapshot)
        if info.step % REDRAW_EVERY == 0 or info.step == steps:
            progress.progress(info.step / steps, text=tr("training.progress", step=info.step, total=steps,
                                                        loss=info.loss, accuracy=info.accuracy))
            live_curve.plotly_chart(loss_curve(entry["history"]), theme=None)

    result = train(trained, task, steps=steps, lr=lr, batch_size=batch_size, on_step=on_step,
                   snapshot_every=max(steps // 30, 1))
    entry["snapshots"] = list(result.snapshots)
    trained.eval()
    entry["exact"] = evaluate(trained, task, n=200)["exact_match"]
    entry["seconds"] = result.seconds


def show_result() -> None:
    entry = st.session_state.get(services.TRAINED_KEY)
    if entry is None:
        st.caption(tr("training.none"))
        return
    entry["model"].eval()
    if "seconds" in entry:
        st.success(tr("training.done", steps=entry["steps"], seconds=entry["seconds"]))
    if entry["exact"] is not None:
        st.metric(tr("training.eval", exact=entry["exact"]), f"{entry['exact']:.1%}")
    st.subheader(tr("training.curve"))
    chart(loss_curve(entry["history"]), key="training_curve")
    snapshots = entry["snapshots"]
    if snapshots:
        st.subheader(tr("training.animation"))
        last = snapshots[-1]
        frames = [(s.step, s.weights[-1].mean(axis=0)) for s in snapshots]  # last decoder layer, mean of heads
        chart(attention_animation(frames, last.tgt_tokens, last.src_tokens,
                                  tr("training.animation_title")), key="training_anim")
