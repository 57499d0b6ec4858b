"""The Training page's weights as files: download the model of this session (a .zip of safetensors + JSON) and
upload weights back (checked, size-capped, safetensors only) as this session's model for its task."""

from __future__ import annotations

import math
import uuid
from dataclasses import replace

import streamlit as st
import torch

from transformer_viz.app.server import checkpoints, models
from transformer_viz.app.session import state
from transformer_viz.app.session.state import TrainedModel, View
from transformer_viz.app.session.widgets import callback, current_view, error_text, literal, tr
from transformer_viz.data.tasks import TASKS
from transformer_viz.weights.files import MAX_UPLOAD_BYTES, MAX_UPLOAD_MB, checkpoint_zip, read_upload
from transformer_viz.weights.pretrained import check_name

HALF_PRECISION_MAX = 65504.0  # the files hold float16 weights
MAX_HISTORY = 10_000  # (step, loss, accuracy) rows read back from an uploaded file


def render(view: View) -> None:
    """The download button for this session's model of the view's task, and the upload."""
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
    return checkpoint_zip(trained.model, TASKS[trained.task], file_name(trained), metrics=metrics,
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
