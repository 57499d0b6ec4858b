"""Models and traces for the pages: cached, shared, never mutated. The only place pages get tensors from."""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import uuid
from concurrent.futures import CancelledError, TimeoutError
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from cachetools import LRUCache
from plotly.basedatatypes import BaseFigure

from transformer_viz.analysis.inference import TextRun, run_text
from transformer_viz.app.server import checkpoints
from transformer_viz.app.server.limits import limits
from transformer_viz.app.session import state
from transformer_viz.app.session.state import TrainedModel, View
from transformer_viz.config import ModelConfig, fits
from transformer_viz.data.tasks import TASKS, model_config_for
from transformer_viz.errors import TranslatableError
from transformer_viz.model import Transformer
from transformer_viz.trace.intervention import Intervention
from transformer_viz.train.loop import evaluate, train
from transformer_viz.train.pool import TrainingPool
from transformer_viz.weights import hf
from transformer_viz.weights.pretrained import load_pretrained

# The figures one server keeps for all its sessions, bounded in bytes as figure_bytes estimates them (Plotly's
# objects around them add up to as much again): at the default shape an entry holds 50 KiB to 2 MiB, so a class's
# views stay; at the largest shape the server allows, Inside one head's nine figures hold ~36 MiB.
FIGURE_CACHE_BYTES = 128 * 2**20
STOP_WAIT_SECONDS = 30  # for a stopped worker to end its step (seconds at the largest allowed shape)


def run_cache_bytes() -> int:
    """The traces one server keeps for all its sessions (limits().run_cache_mib)."""
    return limits().run_cache_mib * 2**20


@dataclass(frozen=True)
class Resolved:
    """The model a view asks for, or why there is none."""

    model: Transformer | None
    model_id: str
    weights: str  # what is really shown: "pretrained", "random", "trained" or "checkpoint:<name>"
    error: ValueError | None = None  # why there is no model (pages show it with ui.error_text)
    note: ValueError | None = None  # why the pretrained weights are not shown


@st.cache_resource(show_spinner=False)
def set_up_server() -> None:
    """Once per server: one torch thread per rerun or training, and long-lived objects out of the GC's way.

    Many sessions share the cores: with torch's default of a thread per core every op waits for a busy core.
    A full collection scans every object not frozen: with what is loaded by now (torch, plotly, streamlit:
    ~200k objects) frozen it costs a few ms, not ~90. (Streamlit's own full collection after every rerun is off,
    .streamlit/config.toml: the shared figures would make it cost 15-30 ms a rerun.)
    """
    torch.set_num_threads(1)
    gc.collect()
    gc.freeze()


@st.cache_resource(show_spinner=False)
def training_pool() -> TrainingPool:
    """The server's trainings: limits().trainings_at_once at once, each in a worker process on one core."""
    return TrainingPool(limits().trainings_at_once, processes=bool(limits().training_processes))


def collect_training() -> None:
    """Keep what this session's last training job trained as its TrainedModel (before the sidebar is drawn):
    finished, or as far as it got when a click (Stop) ended the run that drew it. Nothing when it never started."""
    job, task_name = st.session_state.pop(state.TRAINING_JOB, (None, None))
    if job is None:
        return
    job.stop()  # no-op when it finished; else the worker ends after its current step
    try:
        trained, result, exact = job.result(timeout=STOP_WAIT_SECONDS)
    except (CancelledError, TimeoutError):
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


@st.cache_resource(max_entries=16, show_spinner=False)
def shipped(task_name: str):
    """The pretrained model of a task, loaded once per server and shared by every session."""
    loaded = load_pretrained(task_name)
    gc.freeze()  # keep the long-lived model out of every later full collection
    return loaded


def pretrained_or_error(task_name: str):
    try:
        return shipped(task_name), None
    except ValueError as error:
        return None, error


def pretrained_config(task_name: str) -> ModelConfig | None:
    loaded, _ = pretrained_or_error(task_name)
    return None if loaded is None else loaded.model.config


@st.cache_resource(max_entries=16, show_spinner=False)
def random_model(config: ModelConfig, seed: int) -> Transformer:
    """Fresh weights drawn from `seed` alone: never torch's global RNG, which every session's thread shares."""
    return Transformer(config, generator=torch.Generator().manual_seed(seed)).eval()


def trained_for(task_name: str) -> TrainedModel | None:
    """The model this session trained, if it was trained on this task."""
    trained = st.session_state.get(state.TRAINED)
    return trained if trained is not None and trained.task == task_name else None


def resolve(view: View) -> Resolved:
    """The model of a view: a Hugging Face model it names, or a task's model (resolve_toy)."""
    if view.source == "hf":
        allowed = bool(limits().hf_downloads and st.session_state.get(state.HF_DOWNLOAD))
        return resolve_hugging_face(view.hf_model, allowed)
    return resolve_toy(view)


@st.cache_resource(max_entries=2, show_spinner=False)
def hugging_face_model(name_or_path: str, allow_download: bool) -> hf.HFModel:
    """A Hugging Face model loaded once per server (two at most, each within limits().hf_parameters: a real one
    holds hundreds of MB)."""
    return hf.load(name_or_path, allow_download=allow_download, max_parameters=int(limits().hf_parameters))


def resolve_hugging_face(name_or_path: str, allow_download: bool) -> Resolved:
    """The Hugging Face model named, or why there is none (not installed, not here, not an encoder-decoder)."""
    try:
        model = hugging_face_model(name_or_path.strip(), allow_download)
    except ValueError as error:
        return Resolved(None, "", "hf", error=error)
    return Resolved(model, f"hf:{model.config.name}", "hf")


def resolve_toy(view: View) -> Resolved:
    """Pick the model for a view: the weights it names (named_weights) when they fit its shape (config.fits), else
    random. `Resolved.weights` says which one is really shown. The view's ModelConfig is built here, once."""
    if view.task not in TASKS:
        known = ", ".join(TASKS)
        return Resolved(None, "", "random", error=TranslatableError(
            "server.task", f"unknown task {view.task!r}; known: {known}", task=view.task, known=known))
    beyond = view.beyond_limits()  # whatever asked for it (a link, a callback, code): this server does not build it
    if beyond:
        names = ", ".join(beyond)
        return Resolved(None, "", "random", error=TranslatableError(
            "server.beyond", f"{names} beyond what this server builds (see the sidebar's ranges)", names=names))
    try:
        config = view.model_config()
    except ValueError as error:
        return Resolved(None, "", "random", error=error)
    model, model_id, note = named_weights(view)
    if model is not None and fits(model.config, config):  # in a model of the view's config (its mask value)
        return Resolved(*checkpoints.shown_with_config(model, model_id, config), view.weights)
    return Resolved(random_model(config, view.seed), f"random:{config}:{view.seed}", "random", note=note)


def named_weights(view: View) -> tuple[Transformer | None, str, ValueError | None]:
    """(model, model id, why there is none) of the weights a view names: this session's model trained on its task,
    a checkpoint of an extra folder for its task, or the task's shipped model; (None, "", None) for random."""
    if view.weights == "trained":
        trained = trained_for(view.task)
        return (None, "", None) if trained is None else (trained.model, f"trained:{trained.id}:{trained.steps}", None)
    name = checkpoints.checkpoint_name(view.weights)
    if name is not None:
        return checkpoints.named(name, view.task)
    if view.weights == "pretrained":
        loaded, problem = pretrained_or_error(view.task)
        return (None, "", problem) if loaded is None else (loaded.model, f"pretrained:{view.task}", None)
    return None, "", None


def run_bytes(run: TextRun) -> int:
    """The bytes of a run's tensors."""
    return sum(t.untyped_storage().nbytes() for t in run.trace.values())


@st.cache_resource(show_spinner=False)
def _run_cache() -> tuple[LRUCache, threading.Lock]:
    """The runs of every session on this server, least recently used first out, bounded in bytes."""
    return LRUCache(maxsize=run_cache_bytes(), getsizeof=run_bytes), threading.Lock()


def run(view: View, resolved: Resolved, pad_to: int = 0, intervention: Intervention | None = None) -> TextRun:
    """The trace (and greedy steps) of the view's input, under `intervention` (None: none); raises
    ValueError for unreadable input.

    Shared by all sessions and kept while the cache's byte budget allows: a class toggling between views
    gets them back at once. Kept as objects (not pickled): a run is never mutated.
    """
    key = (resolved.model_id, view.task, view.src_text, view.tgt_text, pad_to, intervention)
    cache, lock = _run_cache()
    with lock:
        found = cache.get(key)
    if found is None:
        found = run_now(view, resolved, pad_to, intervention)
        with lock, contextlib.suppress(ValueError):  # a run larger than the whole budget is not kept
            cache[key] = found
    return found


def run_now(view: View, resolved: Resolved, pad_to: int, intervention: Intervention | None) -> TextRun:
    if not isinstance(resolved.model, hf.HFModel):
        return run_text(resolved.model, TASKS[view.task], view.src_text, view.tgt_text or None, pad_to=pad_to,
                        intervention=intervention)
    if intervention is not None:
        raise ValueError("Interventions run on the toy models only.")
    return hf.run_text(resolved.model, view.src_text, view.tgt_text or None, pad_to=pad_to,
                       max_len=limits().input_tokens, max_new_tokens=limits().input_tokens // 2)


def figure_bytes(figures, sample: int = 16) -> int:
    """About the memory a figure (or a list, tuple or dict of them) holds: its strings, numbers, arrays and
    containers as Plotly keeps them (its JSON is no measure: numbers stay compact arrays, text does not).
    A long list is estimated from `sample` of its items (a figure's lists hold items alike)."""
    total, stack = 0.0, [(figures, 1.0)]
    while stack:
        item, weight = stack.pop()
        if isinstance(item, BaseFigure):  # its properties as Plotly keeps them (to_plotly_json would copy them)
            props = getattr(item, "_data", None), getattr(item, "_layout", None)
            stack.append((item.to_plotly_json() if None in props else props, weight))
            continue
        if isinstance(item, np.ndarray) and item.dtype != object:
            total += weight * item.nbytes
            continue
        total += weight * sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend((value, weight) for value in item.values())
        elif isinstance(item, list | tuple | np.ndarray):
            items = item.ravel() if isinstance(item, np.ndarray) else item
            if len(items) > sample:
                share = len(items) / sample
                stack.extend((items[int(i * share)], weight * share) for i in range(sample))
            else:
                stack.extend((value, weight) for value in items)
    return int(total)


class SharedFigure(go.Figure):
    """A figure of the figure cache: shared by every session and never changed, so its dict is made once.

    st.plotly_chart asks a figure for `to_dict()` on every rerun, a deep copy of all its data (a few ms for a
    page); it only reads the dict (plotly.io.to_json drops trace uids, which these figures have none of)."""

    def to_dict(self):
        shared = self.__dict__.get("_shared_dict")
        if shared is None:
            shared = self.__dict__["_shared_dict"] = super().to_dict()
        return shared


def shared(figures):
    """`figures` (a figure, or a list, tuple or dict holding figures) with every go.Figure made a SharedFigure."""
    if type(figures) is go.Figure:
        figures.__class__ = SharedFigure  # the same object: no copy, no new validation
    elif isinstance(figures, list | tuple):
        for item in figures:
            shared(item)
    elif isinstance(figures, dict):
        for item in figures.values():
            shared(item)
    return figures


@st.cache_resource(show_spinner=False)
def _figure_cache() -> tuple[LRUCache, threading.Lock, dict]:
    """The figures of every session on this server, least recently used first out, bounded in bytes; and a
    lock per figure being built, so that a class asking for the same new figure builds it once."""
    return LRUCache(maxsize=FIGURE_CACHE_BYTES, getsizeof=lambda entry: entry[1]), threading.Lock(), {}


def figure(run_key: tuple, trace, builder, *args, **kwargs):
    """builder(trace, *args, **kwargs), built once per run and arguments and shared by all sessions.

    Building a Plotly figure costs milliseconds to tens of ms of validation; a class toggling between views
    (weights / scores, one head / another, back to a page) gets them back at once. Figures are never mutated.
    Every argument is part of the key, `lang` too: a figure drawn in English is never served in Chinese.
    Arguments are hashable (tuples, not lists); `trace` is whatever run_key names (not part of the key).
    """
    key = (run_key, f"{builder.__module__}.{builder.__qualname__}", args, tuple(sorted(kwargs.items())))
    cache, lock, building = _figure_cache()
    with lock:
        found = cache.get(key)
        if found is None:
            key_lock = building.setdefault(key, threading.Lock())
    if found is not None:
        return found[0]
    with key_lock:  # another session building it: wait for that one
        with lock:
            found = cache.get(key)
        if found is None:
            try:
                built = shared(builder(trace, *args, **kwargs))
                size = figure_bytes(built)  # outside the lock: other sessions read the cache meanwhile
                with lock, contextlib.suppress(ValueError):  # a figure larger than the whole budget is not kept
                    cache[key] = (built, size)
                found = (built,)
            finally:
                with lock:
                    building.pop(key, None)
    return found[0]


EVALUATION_INPUTS = 200  # fresh inputs behind every exact match the Break-it and Compare pages show
RANKING_INPUTS = 100  # per head, when every head is ablated in turn
CHEAT_STEPS = 150  # training without the look-ahead mask: enough for the decoder to learn to copy the future


@st.cache_resource(max_entries=256, show_spinner=False)
def measured(model_id: str, task_name: str, intervention: Intervention, n: int = EVALUATION_INPUTS, *,
             _model: Transformer) -> dict:
    """Exact match and teacher-forced accuracy of one model under one intervention on `n` fresh inputs:
    measured once per server (a class presses the same switches)."""
    return evaluate(_model, TASKS[task_name], n=n, seed=7, intervention=intervention)


@st.cache_resource(max_entries=16, show_spinner=False)
def cheating_model(task_name: str) -> Transformer:
    """A fresh model trained without the look-ahead mask (deterministic: one per server and task; its weights and
    dropout come from seed 0's generators, never the global RNG other sessions' threads use)."""
    task = TASKS[task_name]
    model = Transformer(model_config_for(task), generator=torch.Generator().manual_seed(0))
    train(model, task, steps=CHEAT_STEPS, seed=0, intervention=Intervention(look_ahead=False))
    return model.eval()
