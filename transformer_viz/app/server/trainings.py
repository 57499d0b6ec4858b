"""A server's trainings seen from a session: the pool of worker processes, what a run costs, keeping what it trained."""

from __future__ import annotations

import uuid
from concurrent.futures import CancelledError, TimeoutError

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.server.limits import limits
from transformer_viz.app.server.state import TrainedModel
from transformer_viz.model import Transformer
from transformer_viz.train.pool import TrainingPool, WorkerDied

STOP_WAIT_SECONDS = 30  # for a stopped worker to end its step (seconds at the largest allowed shape)
LOST = "_training_lost"  # session state: this session's last training died with its worker (said once)


@st.cache_resource(show_spinner=False)
def training_pool() -> TrainingPool:
    """The server's trainings: limits().trainings_at_once at once, each in a worker process on one core."""
    return TrainingPool(limits().trainings_at_once, processes=bool(limits().training_processes))


def collect_training() -> None:
    """Keep what this session's last training job trained as its TrainedModel (before the sidebar is drawn):
    finished, or as far as it got when a click (Stop) ended the run that drew it. Nothing when it never started;
    when its worker process died (killed, out of memory), the Training page says so once (LOST)."""
    job, task_name = st.session_state.pop(state.TRAINING_JOB, (None, None))
    if job is None:
        return
    job.stop()  # no-op when it finished; else the worker ends after its current step
    try:
        trained, result, exact = job.result(timeout=STOP_WAIT_SECONDS)
    except (CancelledError, TimeoutError):
        return
    except WorkerDied:  # the server log has the details; the other trainings go on
        st.session_state[LOST] = True
        return
    if result.steps:
        st.session_state[state.TRAINED] = TrainedModel(
            model=trained, id=uuid.uuid4().hex, task=task_name, steps=result.steps, history=tuple(result.history),
            snapshots=tuple(result.snapshots), finished=not result.stopped_early, exact_match=exact,
            seconds=result.seconds)
        st.session_state[state.PENDING_WEIGHTS] = "trained"


def training_cost(model: Transformer, steps: int, batch_size: int) -> float:
    """Parameters × steps × batch size: what a training run costs, about proportional to its time (one run may
    cost limits().training_budget: 4e10 is about two minutes on one core)."""
    return sum(p.numel() for p in model.parameters()) * steps * batch_size

