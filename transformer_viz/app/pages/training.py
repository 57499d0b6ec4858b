"""Training page: train a copy of the current model on its task, live, then watch attention take shape; take
the weights home as files and bring them back."""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import replace

import streamlit as st
import torch

from transformer_viz.app.server import checkpoints, models, state, trainings
from transformer_viz.app.server.figure_cache import shared
from transformer_viz.app.server.limits import limits
from transformer_viz.app.server.state import TrainedModel, View
from transformer_viz.app.session.charts import chart, figure_min_font
from transformer_viz.app.session.page import shown_model, toy_only
from transformer_viz.app.session.widgets import callback, current_view, view_widget
from transformer_viz.app.session.words import error_text, lang, literal, tr
from transformer_viz.data.tasks import get_task
from transformer_viz.figures.training import attention_animation, loss_curve
from transformer_viz.weights.files import MAX_UPLOAD_BYTES, MAX_UPLOAD_MB, checkpoint_zip, read_upload
from transformer_viz.weights.pretrained import check_name

STEP_CHOICES = (100, 200, 400, 800, 1500, 3000)  # those up to limits().train_steps are offered
REDRAW_SECONDS = 0.3  # progress and loss curve
EVALUATION_INPUTS = 200  # fresh inputs for the exact match of a finished run
LR_CHOICES = (1e-4, 3e-4, 1e-3, 2e-3, 3e-3)  # the same for every task (each task's default among them)
BATCH_CHOICES = (16, 32, 64, 128)
HALF_PRECISION_MAX = 65504.0  # the files hold float16 weights
MAX_HISTORY = 10_000  # (step, loss, accuracy) rows read back from an uploaded file


def render() -> None:
    st.title(tr("training.title"))
    st.markdown(tr("training.intro"))
    if st.session_state.pop(trainings.LOST, False):
        st.error(tr("training.lost"), icon=":material/error:")
    if toy_only():
        return
    shown = shown_model()
    if shown is None:
        return
    view, resolved = shown
    task = get_task(view.task)
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
    weights_section(view)  # download the weights, upload weights back


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
                status.info(line_words(place), icon=":material/groups:")
            new_steps = [(info.step, info.loss, info.accuracy) for info in job.progress()]
            history += new_steps
            if new_steps:  # a new figure each time (the same one twice in a run would be a duplicate element)
                step, loss, accuracy = history[-1]
                status.empty()
                progress.progress(step / steps, text=tr("training.progress", step=step, total=steps, loss=loss,
                                                        accuracy=accuracy))
                # As `chart` sends a figure (margins settled, drawn once: SharedFigure), without a key: each is new
                live_curve.plotly_chart(shared(loss_curve(history, min_font=figure_min_font(), lang=lang())),
                                        theme=None)
            time.sleep(REDRAW_SECONDS)  # a Stop click or a closed tab ends the script at the next st call
    finally:
        job.stop()  # the worker ends after its current step


def line_words(place: int) -> str:
    """Where a training waits: how many wait before it, or (none) that it starts when a running one ends."""
    if place == 1:
        return tr("training.next", n=limits().trainings_at_once)
    return tr("training.waiting", ahead=place - 1, n=limits().trainings_at_once)


def show_result(trained: TrainedModel | None) -> None:
    if trained is None:
        st.caption(tr("training.none"))
        return
    trained.model.eval()  # a stopped run leaves it in training mode
    if trained.finished:
        st.success(tr("training.done", steps=trained.steps, seconds=trained.seconds))
        st.metric(tr("training.eval", exact=trained.exact_match), f"{trained.exact_match:.1%}")
    st.subheader(tr("training.curve"))
    chart(loss_curve(trained.history, min_font=figure_min_font(), lang=lang()), key="training_curve")
    if trained.snapshots:
        st.subheader(tr("training.animation"))
        last = trained.snapshots[-1]
        frames = [(s.step, s.weights[-1].mean(axis=0)) for s in trained.snapshots]  # last decoder layer, mean of heads
        one_stream = last.src_tokens == last.tgt_tokens  # a decoder-only model's snapshot: its self-attention
        title = tr("training.animation_title_self" if one_stream else "training.animation_title")
        chart(attention_animation(frames, last.tgt_tokens, last.src_tokens, title,
                                  min_font=figure_min_font(), lang=lang()), key="training_anim")



def weights_section(view: View) -> None:
    """Your weights as files: the download of this session's model of the view's task (a .zip of safetensors +
    JSON), and the upload of weights back (checked, size-capped, safetensors only) as this session's model."""
    st.subheader(tr("weights_io.title"))
    download_column, upload_column = st.columns(2)
    trained = models.trained_for(view.task)
    with download_column:
        if trained is None:
            st.caption(tr("weights_io.nothing"))
        elif not fits_half_precision(trained.model):
            st.warning(tr("weights_io.cannot_save"), icon=":material/warning:")
        else:
            name = file_name(trained)
            st.download_button(tr("weights_io.download"), data=lambda: zipped(trained), file_name=f"{name}.zip",
                               mime="application/zip", key=state.WEIGHTS_DOWNLOAD, on_click="ignore",
                               icon=":material/download:", help=tr("weights_io.download_help", name=name))
    with upload_column:
        st.html(uploader_words())
        st.file_uploader(tr("weights_io.upload", limit=MAX_UPLOAD_MB), accept_multiple_files=True,
                         key=state.WEIGHTS_UPLOAD, on_change=accept_upload, max_upload_size=MAX_UPLOAD_MB,
                         help=tr("weights_io.upload_help"))
        notice = st.session_state.pop(state.UPLOAD_NOTICE, None)
        if notice is not None:
            key, values = notice
            if key == "weights_io.uploaded":
                st.success(tr(key, **values), icon=":material/upload:")
            else:
                st.error(tr(key, **values), icon=":material/error:")


def uploader_words() -> str:
    """Streamlit's uploader says "Upload" and "16MB per file" in English only (no parameter changes them): a style
    that draws the catalog's words in their place, in the session's language."""
    button = "[data-testid=stFileUploaderDropzone] button [data-testid=stMarkdownContainer] p"
    limit = "[data-testid=stFileUploaderDropzoneInstructions] span"
    words = [json.dumps(tr("weights_io.browse"), ensure_ascii=False),  # as CSS strings (quotes escaped)
             json.dumps(tr("weights_io.limit", limit=MAX_UPLOAD_MB), ensure_ascii=False)]
    return (f"<style>{button},{limit}{{font-size:0}} {button}::after{{content:{words[0]};font-size:1rem}} "
            f"{limit}::after{{content:{words[1]};font-size:0.875rem}}</style>")


def file_name(trained: TrainedModel) -> str:
    """The checkpoint's name in the download: the uploaded one's, else "<task>-trained"."""
    return trained.uploaded or f"{trained.task}-trained"


def fits_half_precision(model) -> bool:
    """Whether every weight survives the file's float16 (save_pretrained refuses the others)."""
    with torch.no_grad():
        return all(bool(torch.isfinite(p).all()) and float(p.abs().max()) <= HALF_PRECISION_MAX
                   for p in model.parameters() if p.numel())


def zipped(trained: TrainedModel) -> bytes:
    """The model as `<name>.safetensors` + `<name>.json` in one .zip; the JSON keeps the loss curve and the
    exact match, so that an upload shows them again."""
    training = {"source": "the transformer_viz app's Training page", "steps": trained.steps,
                "history": [list(row) for row in trained.history]}
    if trained.seconds is not None:
        training["seconds"] = round(trained.seconds, 1)
    metrics = {} if trained.exact_match is None else {"exact_match": trained.exact_match}
    return checkpoint_zip(trained.model, get_task(trained.task), file_name(trained), metrics=metrics,
                          training=training)


@callback
def accept_upload() -> None:
    """The uploader's callback (before this run's widgets): check the files, then show their model."""
    files = st.session_state.get(state.WEIGHTS_UPLOAD) or []
    if files:
        st.session_state[state.UPLOAD_NOTICE] = use_upload([(file.name, file.getvalue()) for file in files])


def use_upload(files: list[tuple[str, bytes]]) -> tuple[str, dict]:
    """Make the uploaded checkpoint this session's model of its task, with the sidebar set to its shape.
    Returns the notice to show: (catalog key, values)."""
    task = st.session_state.get(state.TASK, View.task)
    try:
        loaded = read_upload(files, task=task, max_bytes=MAX_UPLOAD_BYTES)
    except ValueError as error:
        return "weights_io.refused", {"message": literal(error_text(error))}
    shape = checkpoints.view_shape(loaded.model.config, task)
    if shape is None:
        error = checkpoints.beyond_error(loaded.model.config, task)
        return "weights_io.refused", {"message": literal(error_text(error))}
    config = replace(current_view(), **shape).model_config()  # the sidebar's view once set to its shape
    name = _valid_name(loaded.meta.get("name")) or f"{task}-uploaded"
    training, metrics = loaded.meta.get("training", {}), loaded.metrics
    history = _history(training.get("history"))
    steps = next((s for s in (training.get("steps_done"), training.get("steps")) if _whole(s)),
                 history[-1][0] if history else 0)
    exact, seconds = metrics.get("exact_match"), training.get("seconds")
    exact = exact if _real(exact) and 0 <= exact <= 1 else None
    seconds = seconds if _real(seconds) and seconds >= 0 else None
    st.session_state[state.TRAINED] = TrainedModel(
        model=checkpoints.model_with_config(loaded.model, config), id=uuid.uuid4().hex, task=task, steps=steps,
        history=history, exact_match=exact, seconds=seconds, finished=exact is not None and seconds is not None,
        uploaded=name)
    st.session_state.update(shape)
    st.session_state[state.WEIGHTS] = "trained"
    return "weights_io.uploaded", {"name": literal(name), "task": tr(f"task.{task}")}


def _valid_name(name) -> str | None:
    try:
        return check_name(name)
    except ValueError:
        return None


def _whole(value) -> bool:
    return type(value) is int and value >= 0


def _real(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _history(rows) -> tuple[tuple[int, float, float], ...]:
    """The loss curve an uploaded file keeps, if it is one: (step, loss, accuracy) rows; else none."""
    if not isinstance(rows, list) or len(rows) > MAX_HISTORY:
        return ()
    if not all(isinstance(row, list) and len(row) == 3 and _whole(row[0]) and _real(row[1]) and _real(row[2])
               for row in rows):
        return ()
    return tuple((row[0], float(row[1]), float(row[2])) for row in rows)
