"""Checkpoints of one's own: the extra folders' checkpoints ($TVIZ_CHECKPOINTS, `transformer-viz --checkpoints`)
beside the shipped ones, and the shapes the sidebar gives weights that are not the shipped ones.

A checkpoint is offered as the weights value "checkpoint:<name>" (a stable identifier; only words.FORMATS
translates it) for the task its metadata names, once load_pretrained has checked it. A broken one is named in the
sidebar with the reason, never offered. Listing and loading are shared by every session of the server (cached).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from time import monotonic

import streamlit as st
import torch

from transformer_viz.analysis.architecture import toy_architecture
from transformer_viz.app.server import state
from transformer_viz.app.server.state import MASK_VALUES, SHAPE_FIELDS, View
from transformer_viz.config import ModelConfig
from transformer_viz.data.tasks import get_task
from transformer_viz.errors import TranslatableError
from transformer_viz.model import Transformer, build_model
from transformer_viz.weights.pretrained import (
    CHECKPOINTS_ENV,
    Pretrained,
    checkpoint_dirs,
    extra_checkpoints,
    load_pretrained,
)

PREFIX = "checkpoint:"  # weights values of the extra checkpoints: "checkpoint:<name>"
LISTED_SECONDS = 10  # a checkpoint copied into a folder appears within this time
MAX_LISTED = 64  # checkpoints listed from all folders together (each is loaded to be checked)


@dataclass(frozen=True)
class Extra:
    """A checkpoint of an extra folder: loaded and checked, or why it cannot be used."""

    name: str
    folder: Path
    loaded: Pretrained | None = None
    error: ValueError | None = None

    @property
    def weights(self) -> str:
        return weights_value(self.name)


def weights_value(name: str) -> str:
    return PREFIX + name


def checkpoint_name(weights: str) -> str | None:
    """The checkpoint a weights value names, or None for "pretrained", "random" and "trained"."""
    return weights.removeprefix(PREFIX) if isinstance(weights, str) and weights.startswith(PREFIX) else None


class _Listing:
    """(name, folder) of the checkpoints in the folders $TVIZ_CHECKPOINTS names, listed again when the folders
    change or the listing is LISTED_SECONDS old. One lock around the check and the read: every sidebar reads it,
    and a read never finds the listing gone between the two (as Streamlit's TTL cache did: a KeyError)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._folders, self._listed_at, self._names = None, 0.0, ()

    def __call__(self, folders: str) -> tuple[tuple[str, Path], ...]:
        with self._lock:
            now = monotonic()
            if folders != self._folders or now - self._listed_at >= LISTED_SECONDS:
                dirs = checkpoint_dirs({CHECKPOINTS_ENV: folders})
                self._names = tuple(extra_checkpoints(dirs).items())[:MAX_LISTED]
                self._folders, self._listed_at = folders, now
            return self._names


_listing = _Listing()


def _stamp(name: str, folder: Path) -> tuple:
    """What changes when either file is replaced (a new file is loaded and checked again)."""
    try:
        return tuple((s.st_mtime_ns, s.st_size) for s in
                     ((folder / f"{name}{suffix}").stat() for suffix in (".json", ".safetensors")))
    except OSError:
        return ()


@st.cache_resource(max_entries=MAX_LISTED, show_spinner=False)
def _load(name: str, folder: Path, stamp: tuple) -> Extra:
    try:
        loaded = load_pretrained(name, folder)
    except ValueError as error:
        return Extra(name, folder, error=error)
    if view_shape(loaded.model.config, loaded.task.name) is None:
        return Extra(name, folder, error=beyond_error(loaded.model.config, loaded.task.name))
    return Extra(name, folder, loaded=loaded)


def extras() -> list[Extra]:
    """Every checkpoint of the extra folders, loaded and checked (once per server and file version)."""
    return [_load(name, folder, _stamp(name, folder)) for name, folder in
            _listing(os.environ.get(CHECKPOINTS_ENV, ""))]


def usable(task_name: str) -> list[Extra]:
    """The checkpoints that load, for one task."""
    return [extra for extra in extras() if extra.loaded is not None and extra.loaded.task.name == task_name]


def broken() -> list[Extra]:
    return [extra for extra in extras() if extra.loaded is None]


def find(name: str) -> Extra | None:
    return next((extra for extra in extras() if extra.name == name), None)


def _shape_values(config: ModelConfig, task_name: str) -> dict:
    values = {field: getattr(config, field) for field in SHAPE_FIELDS}
    task = get_task(task_name)
    own = toy_architecture(config.architecture).task_config(task).max_len
    values[state.MAX_LEN] = 0 if config.max_len == own else config.max_len
    return values


def view_shape(config: ModelConfig, task_name: str) -> dict | None:
    """The sidebar's shape settings for weights of `config` (the mask value only when the sidebar offers it),
    or None when the sidebar cannot show that shape (beyond what a class server builds)."""
    values = _shape_values(config, task_name)
    if View(**values).beyond_limits():
        return None
    if values[state.MASK_VALUE] not in MASK_VALUES:
        del values[state.MASK_VALUE]
    return values


def beyond_error(config: ModelConfig, task_name: str) -> TranslatableError:
    """Why the sidebar cannot show weights of `config` (as the model service says it of a view)."""
    names = ", ".join(View(**_shape_values(config, task_name)).beyond_limits())
    return TranslatableError("server.beyond", f"{names} beyond what this server builds (see the sidebar's ranges)",
                             names=names)


def model_with_config(model: Transformer, config: ModelConfig) -> Transformer:
    """`model` itself when its config is `config`, else a new eval model of `config` holding its weights."""
    if model.config == config:
        return model
    rebuilt = build_model(config, generator=torch.Generator()).eval()  # every value is replaced below
    rebuilt.load_state_dict(model.state_dict())
    return rebuilt


def shown_with_config(model: Transformer, model_id: str, config: ModelConfig) -> tuple[Transformer, str]:
    """(model, id) of weights shown in a model of `config` (which they fit: config.fits): `model` itself when its
    config is `config`, else its weights in a model of `config`, built once per server, whose id names `config`."""
    if model.config == config:
        return model, model_id
    return _with_config(model_id, config, model), f"{model_id}:{config}"


@st.cache_resource(max_entries=16, show_spinner=False)
def _with_config(model_id: str, config: ModelConfig, _model: Transformer) -> Transformer:
    return model_with_config(_model, config)


def named(name: str, task_name: str) -> tuple[Transformer | None, str, ValueError | None]:
    """(model, model id, why not) of the extra checkpoint `name` for a task: (None, "", None) when it is not there
    or is for another task; (None, "", its error) when it does not load."""
    extra = find(name)
    if extra is None or extra.error is not None:
        return None, "", extra.error if extra is not None else None
    if extra.loaded.task.name != task_name:
        return None, "", None
    return extra.loaded.model, f"checkpoint:{name}:{_stamp(name, extra.folder)}", None


def on_weights_change() -> None:
    """Choosing a checkpoint gives the sidebar its shape (as "Back to the pretrained model" does)."""
    extra = find(checkpoint_name(st.session_state.get(state.WEIGHTS)) or "")
    if extra is not None and extra.loaded is not None:
        st.session_state.update(view_shape(extra.loaded.model.config, extra.loaded.task.name) or {})
