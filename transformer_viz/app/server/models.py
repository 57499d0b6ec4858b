"""The models and runs pages show: resolved from the view, cached and shared by every session, never mutated.

The only place pages get models and traces from.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from dataclasses import dataclass

import streamlit as st
import torch
from cachetools import LRUCache
from streamlit.runtime import Runtime

from transformer_viz.analysis.inference import TextRun
from transformer_viz.app.server import checkpoints, hf_folders, state
from transformer_viz.app.server.allocator import keep_freed_memory_mapped
from transformer_viz.app.server.limits import limits
from transformer_viz.app.server.nodelay import serve_without_delay
from transformer_viz.app.server.state import TrainedModel, View, tasks_for
from transformer_viz.app.server.uploads import bound_uploads
from transformer_viz.config import ModelConfig, fits
from transformer_viz.errors import TranslatableError
from transformer_viz.i18n import translatable_error
from transformer_viz.model import DecoderOnlyTransformer, Transformer, build_model
from transformer_viz.model.sampling import Sampling
from transformer_viz.trace.intervention import Intervention
from transformer_viz.weights import hf, hf_causal
from transformer_viz.weights.architectures import architecture_of
from transformer_viz.weights.pretrained import load_pretrained, pretrained_name


def run_cache_bytes() -> int:
    """The traces one server keeps for all its sessions (limits().run_cache_mib)."""
    return limits().run_cache_mib * 2**20


@dataclass(frozen=True)
class Resolved:
    """The model a view asks for, or why there is none."""

    model: Transformer | hf.HFModel | hf_causal.HFCausalModel | None
    model_id: str
    weights: str  # what is really shown: "pretrained", "random", "trained" or "checkpoint:<name>"
    error: ValueError | None = None  # why there is no model (pages show it with ui.error_text)
    note: ValueError | None = None  # why the pretrained weights are not shown


@st.cache_resource(show_spinner=False)
def set_up_server() -> None:
    """Once per server: one torch thread per rerun or training, freed trace memory kept for the next trace
    (allocator.py), no Nagle's delay on the server's connections (nodelay.py), uploads bounded (uploads.py), and
    long-lived objects out of the GC's way.

    Many sessions share the cores: with torch's default of a thread per core every op waits for a busy core.
    A full collection scans every object not frozen: with what is loaded by now (torch, plotly, streamlit:
    ~200k objects) frozen it costs a few ms, not ~90. (Streamlit's own full collection after every rerun is off,
    .streamlit/config.toml: the shared figures would make it cost 15-30 ms a rerun.)
    """
    torch.set_num_threads(1)
    keep_freed_memory_mapped()
    serve_without_delay()
    if Runtime.exists():  # a real server (not AppTest): uploads bounded per session and address
        bound_uploads(Runtime.instance(), limits().upload_session_mib, limits().upload_address_mib)
    gc.collect()
    gc.freeze()


@st.cache_resource(max_entries=16, show_spinner=False)
def shipped(name: str):
    """A shipped pretrained model (named by `pretrained_name`), loaded once per server and shared by every session."""
    loaded = load_pretrained(name)
    gc.freeze()  # keep the long-lived model out of every later full collection
    return loaded


def pretrained_or_error(name: str):
    try:
        return shipped(name), None
    except ValueError as error:
        return None, error


def pretrained_config(name: str) -> ModelConfig | None:
    loaded, _ = pretrained_or_error(name)
    return None if loaded is None else loaded.model.config


@st.cache_resource(max_entries=16, show_spinner=False)
def random_model(config: ModelConfig, seed: int) -> Transformer | DecoderOnlyTransformer:
    """Fresh weights drawn from `seed` alone: never torch's global RNG, which every session's thread shares."""
    return build_model(config, generator=torch.Generator().manual_seed(seed)).eval()


def trained_for(task_name: str) -> TrainedModel | None:
    """The model this session trained, if it was trained on this task."""
    trained = st.session_state.get(state.TRAINED)
    return trained if trained is not None and trained.task == task_name else None


def hf_downloads_here() -> bool:
    """Whether this session may let a Hugging Face model be downloaded (up to ~2 GB): with TVIZ_HF_DOWNLOADS=1 any;
    by default (2) only a browser on the server's own computer, not through a proxy: a server reachable from the
    network does not download gigabytes because a visitor asked; with 0 none."""
    return downloads_allowed(limits().hf_downloads, st.context.ip_address,
                             (st.context.headers or {}).get("X-Forwarded-For"))


def downloads_allowed(setting: int, address: str | None, forwarded: str | None) -> bool:
    """`address`: the browser's (None: the server's own computer); `forwarded`: a proxy's X-Forwarded-For."""
    return setting == 1 or (setting == 2 and address is None and not forwarded)


def resolve(view: View) -> Resolved:
    """The model of a view: a Hugging Face model it names, or a task's model (resolve_toy)."""
    if view.source == "hf":
        allowed = bool(hf_downloads_here() and st.session_state.get(state.HF_DOWNLOAD))
        return resolve_hugging_face(view.hf_model, allowed)
    return resolve_toy(view)


@st.cache_resource(max_entries=2, show_spinner=False)
def hugging_face_model(name_or_path: str, allow_download: bool) -> hf.HFModel | hf_causal.HFCausalModel:
    """A Hugging Face model loaded once per server (two at most, each within limits().hf_parameters: a real one
    holds hundreds of MB): its config's model_type, read first, picks the encoder-decoder or the decoder-only
    loader."""
    model_type = hf_causal.model_type(name_or_path, allow_download)
    if model_type in hf_causal.FAMILIES:
        load = hf_causal.load
    elif model_type is None or model_type in (*hf.FAMILIES, *hf.T5_LIKE, "umt5"):
        load = hf.load  # which also says why a config cannot be read
    else:
        raise translatable_error("hf.app_family", model_type=model_type)
    return load(name_or_path, allow_download=allow_download, max_parameters=int(limits().hf_parameters))


FAILED_LOAD_SECONDS = 300  # a folder that failed to load is not read again for this long (its owner may fix it)


@st.cache_resource(max_entries=64, ttl=FAILED_LOAD_SECONDS, show_spinner=False)
def load_failure(name_or_path: str, allow_download: bool) -> ValueError | None:
    """Why a Hugging Face model cannot be loaded (None: it loads), remembered: a failing 2 GB folder read on every
    visit would cost the server 20 s each time."""
    try:
        hugging_face_model(name_or_path, allow_download)
    except ValueError as error:
        return error
    return None


def resolve_hugging_face(name_or_path: str, allow_download: bool) -> Resolved:
    """The Hugging Face model named, or why there is none (not installed, not here, not a family traced here)."""
    try:
        hf_folders.check_folder(name_or_path.strip())  # before anything reads the disk
        error = load_failure(name_or_path.strip(), allow_download)
        if error is not None:
            raise error
        model = hugging_face_model(name_or_path.strip(), allow_download)  # loaded, or again if evicted since
    except ValueError as error:
        return Resolved(None, "", "hf", error=error)
    return Resolved(model, f"hf:{model.config.name}", "hf")


def resolve_toy(view: View) -> Resolved:
    """Pick the model for a view: the weights it names (named_weights) when they fit its shape (config.fits), else
    random. `Resolved.weights` says which one is really shown. The view's ModelConfig is built here, once."""
    if view.task not in tasks_for(view.architecture):
        known = ", ".join(tasks_for(view.architecture))
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
        name = pretrained_name(view.task, view.architecture)
        loaded, problem = pretrained_or_error(name)
        return (None, "", problem) if loaded is None else (loaded.model, f"pretrained:{name}", None)
    return None, "", None


def run_bytes(run: TextRun) -> int:
    """The bytes of a run's tensors."""
    return sum(t.untyped_storage().nbytes() for t in run.trace.values())


@st.cache_resource(show_spinner=False)
def _run_cache() -> tuple[LRUCache, threading.Lock]:
    """The runs of every session on this server, least recently used first out, bounded in bytes."""
    return LRUCache(maxsize=run_cache_bytes(), getsizeof=run_bytes), threading.Lock()


def view_sampling(view: View, resolved: Resolved) -> Sampling | None:
    """How the view's run decodes: its sampling settings (View.sampling_settings), None for greedy. A Hugging Face
    model decodes greedily (its own loop, weights/hf.py)."""
    settings = view.sampling_settings()
    return None if settings is None or not architecture_of(resolved.model).toy else Sampling(*settings)


def run(view: View, resolved: Resolved, pad_to: int = 0, intervention: Intervention | None = None) -> TextRun:
    """The trace (and decoding steps, greedy or sampled as the view says) of the view's input, under
    `intervention` (None: none); raises ValueError for unreadable input.

    Shared by all sessions and kept while the cache's byte budget allows: a class toggling between views
    gets them back at once. Kept as objects (not pickled): a run is never mutated.
    """
    how = view_sampling(view, resolved) if not view.tgt_text else None  # a teacher-forced run decodes nothing
    key = (resolved.model_id, view.task, view.src_text, view.tgt_text, pad_to, intervention, how)
    cache, lock = _run_cache()
    with lock:
        found = cache.get(key)
    if found is None:
        found = run_now(view, resolved, pad_to, intervention, how)
        with lock, contextlib.suppress(ValueError):  # a run larger than the whole budget is not kept
            cache[key] = found
    return found


def run_now(view: View, resolved: Resolved, pad_to: int, intervention: Intervention | None,
            sampling: Sampling | None = None) -> TextRun:
    """The view's text through its model, as the model's Architecture runs it (a model that reads any text: within
    the server's input limit, half of it for the answer)."""
    architecture = architecture_of(resolved.model)
    return architecture.run_text(resolved.model, architecture.tasks().get(view.task), view.src_text,
                                 view.tgt_text or None, pad_to=pad_to, intervention=intervention, sampling=sampling,
                                 max_len=limits().input_tokens)

