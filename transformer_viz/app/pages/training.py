"""Training page: train a copy of the current model on its task, live, then watch attention take shape."""

from __future__ import annotations

import time
from dataclasses import replace

import streamlit as st

from transformer_viz.app.pages import training_weights as weights_io
from transformer_viz.app.server import models, trainings
from transformer_viz.app.server.limits import limits
from transformer_viz.app.session import state
from transformer_viz.app.session.page import shown_model, toy_only
from transformer_viz.app.session.state import TrainedModel, View
from transformer_viz.app.session.widgets import (
    chart,
    lang,
    tr,
    view_widget,
)
from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.training import attention_animation, loss_curve

STEP_CHOICES = (100, 200, 400, 800, 1500, 3000)  # those up to limits().train_steps are offered
REDRAW_SECONDS = 0.3  # progress and loss curve
EVALUATION_INPUTS = 200  # fresh inputs for the exact match of a finished run
LR_CHOICES = (1e-4, 3e-4, 1e-3, 2e-3, 3e-3)  # the same for every task (each task's default among them)
BATCH_CHOICES = (16, 32, 64, 128)


def render() -> None:
    st.title(tr("training.title"))
    st.markdown(tr("training.intro"))
    if toy_only():
        return
    shown = shown_model()
    if shown is None:
        return
    view, resolved = shown
    task = TASKS[view.task]
    defaults = task.train_defaults
    steps_column, lr_column, batch_column = st.columns(3)
    steps = view_widget(steps_column.select_slider, state.TRAIN_STEPS, tr("training.steps"),
                        tuple(n for n in STEP_CHOICES if n <= limits().train_steps), value=View.train_steps)
    lr = view_widget(lr_column.select_slider, state.TRAIN_LR, tr("training.lr"), LR_CHOICES, value=defaults.lr,
                     format_func=lambda v: f"{v:g}")
    batch_size = view_widget(batch_column.select_slider, state.TRAIN_BATCH, tr("training.batch"), BATCH_CHOICES,
                             value=defaults.batch_size)
    start_from = view_widget(st.radio, state.TRAIN_FROM, tr("training.from"), ("fresh", "current"), horizontal=True)
    if start_from == "fresh":  # a new model of the same shape: the pretrained weights are not the starting point
        resolved = replace(resolved, model=models.random_model(resolved.model.config, view.seed))
    too_long = trainings.training_cost(resolved.model, steps, batch_size) > limits().training_budget
    if too_long:
        st.warning(tr("training.too_long"), icon=":material/hourglass_disabled:")
    st.caption(tr("training.limits", n=limits().trainings_at_once, steps=limits().train_steps))
    start_column, stop_column = st.columns([1, 5])
    if start_column.button(tr("training.start"), type="primary", key=state.TRAINING_START, disabled=too_long):
        # Any click (the Stop button included) ends this run; the worker stops within a step, what it trained is kept
        stop_column.button(tr("training.stop"), key=state.TRAINING_STOP)
        run_training(resolved.model, task, steps, lr, batch_size)
        st.rerun()
    show_result(models.trained_for(view.task))
    weights_io.render(view)  # download the weights, upload weights back


def run_training(model, task, steps: int, lr: float, batch_size: int) -> None:
    """Train a copy of the shared model in the server's training pool (waiting in line if need be), drawing its
    progress. The session keeps the job: the next run keeps what it trained (trainings.collect_training), whether
    it finished or a click (Stop) ended it."""
    job = trainings.training_pool().submit(model, task.name, steps=steps, lr=lr, batch_size=batch_size,
                                          snapshot_every=max(steps // 30, 1), evaluate_on=EVALUATION_INPUTS)
    st.session_state[state.TRAINING_JOB] = (job, task.name)
    status, progress, live_curve = st.empty(), st.empty(), st.empty()
    history = []
    try:
        while not job.done():
            place = job.position()
            if place:
                status.info(tr("training.waiting", place=place, n=limits().trainings_at_once), icon=":material/groups:")
            new_steps = [(info.step, info.loss, info.accuracy) for info in job.progress()]
            history += new_steps
            if new_steps:  # a new figure each time (the same one twice in a run would be a duplicate element)
                step, loss, accuracy = history[-1]
                status.empty()
                progress.progress(step / steps, text=tr("training.progress", step=step, total=steps, loss=loss,
                                                        accuracy=accuracy))
                live_curve.plotly_chart(loss_curve(history, lang=lang()), theme=None)
            time.sleep(REDRAW_SECONDS)  # a Stop click or a closed tab ends the script at the next st call
    finally:
        job.stop()  # the worker ends after its current step


def show_result(trained: TrainedModel | None) -> None:
    if trained is None:
        st.caption(tr("training.none"))
        return
    trained.model.eval()  # a stopped run leaves it in training mode
    if trained.finished:
        st.success(tr("training.done", steps=trained.steps, seconds=trained.seconds))
        st.metric(tr("training.eval", exact=trained.exact_match), f"{trained.exact_match:.1%}")
    st.subheader(tr("training.curve"))
    chart(loss_curve(trained.history, lang=lang()), key="training_curve")
    if trained.snapshots:
        st.subheader(tr("training.animation"))
        last = trained.snapshots[-1]
        frames = [(s.step, s.weights[-1].mean(axis=0)) for s in trained.snapshots]  # last decoder layer, mean of heads
        chart(attention_animation(frames, last.tgt_tokens, last.src_tokens, tr("training.animation_title"),
                                  lang=lang()), key="training_anim")
