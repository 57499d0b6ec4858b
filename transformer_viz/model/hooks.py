"""What the model's forward pass reads from its caller's context: the recording, the intervention, head gates
and the generator of dropout's masks.

A HookPoint is an identity placed on a tensor worth seeing. It costs one context-variable lookup when
nothing records. `recording()` installs a recorder for the current thread (or asyncio task) only, so
several users can trace the same shared model at once and each gets their own tensors; `intervening()`
does the same for an Intervention, `dropout_from()` for the generator a training draws its dropout
masks from, and `gating()` for head gates (Michel et al. 2019's head mask ξ, which gradients flow through).
Nothing is ever stored on a module.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from transformer_viz.trace.intervention import NO_INTERVENTION, Intervention
from transformer_viz.trace.names import LEAVES

_active_recorder: contextvars.ContextVar[dict[str, torch.Tensor] | None] = contextvars.ContextVar(
    "transformer_viz_recorder", default=None
)


class HookPoint(nn.Module):
    """Identity on a tensor; saves it under `self.name` while a recording is active.

    The name is the module path minus the `hook_` prefix, set by `name_hook_points`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.name = ""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        recorder = _active_recorder.get()
        if recorder is not None:  # a CPU tensor outside autograd is kept as it is (detach() and cpu() cost µs)
            recorder[self.name] = x.detach().cpu() if x.requires_grad or not x.is_cpu else x
        return x

    # Skip nn.Module's hook dispatch: this runs dozens of times per forward pass.
    __call__ = forward


def name_hook_points(root: nn.Module) -> None:
    """Give every HookPoint under `root` its module path, e.g. `encoder.layers.0.self_attn.weights`."""
    for path, module in root.named_modules():
        if isinstance(module, HookPoint):
            parent, _, leaf = path.rpartition(".")
            if not leaf.startswith("hook_") or leaf[len("hook_"):] not in LEAVES:
                raise ValueError(f"HookPoint {path!r} must be called hook_<leaf> with a leaf from LEAVES.")
            module.name = f"{parent}.{leaf[len('hook_'):]}" if parent else leaf[len("hook_"):]


@contextmanager
def recording(into: dict[str, torch.Tensor] | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """Record every HookPoint reached in this thread into a dict (a fresh one unless given)."""
    recorder = {} if into is None else into
    token = _active_recorder.set(recorder)
    try:
        yield recorder
    finally:
        _active_recorder.reset(token)


_active: contextvars.ContextVar[Intervention | None] = contextvars.ContextVar(
    "transformer_viz_intervention", default=None
)


def active_intervention() -> Intervention:
    """The intervention the model's modules apply now (the default one: none)."""
    return _active.get() or NO_INTERVENTION


@contextmanager
def intervening(intervention: Intervention | None) -> Iterator[Intervention]:
    """Apply `intervention` (None: none) to every forward pass of this thread inside the block."""
    intervention = Intervention() if intervention is None else intervention
    if not isinstance(intervention, Intervention):
        raise ValueError(f"intervention must be an Intervention, got {type(intervention).__name__}.")
    token = _active.set(intervention)
    try:
        yield intervention
    finally:
        _active.reset(token)


_head_gates: contextvars.ContextVar[Mapping[tuple[str, int], torch.Tensor] | None] = contextvars.ContextVar(
    "transformer_viz_head_gates", default=None
)


def active_gate(site: tuple[str, int] | None) -> torch.Tensor | None:
    """The gate of the heads at `site` (attention kind, layer) under `gating`, or None."""
    gates = _head_gates.get()
    return None if gates is None or site is None else gates.get(site)


@contextmanager
def gating(gates: Mapping[tuple[str, int], torch.Tensor]) -> Iterator[Mapping[tuple[str, int], torch.Tensor]]:
    """Multiply each head's output (before W_O) by its gate in every forward pass of this thread inside the block.

    gates: (kind, layer) -> (heads,) or (batch, heads), e.g. ones that require grad: d loss / d gate is
    Michel et al.'s importance of a head. Sites not in `gates` are left alone; a gate of 1 changes nothing.
    """
    token = _head_gates.set(gates)
    try:
        yield gates
    finally:
        _head_gates.reset(token)


_dropout_generator: contextvars.ContextVar[torch.Generator | None] = contextvars.ContextVar(
    "transformer_viz_dropout_generator", default=None
)


@contextmanager
def dropout_from(generator: torch.Generator) -> Iterator[torch.Generator]:
    """Draw the masks of every Dropout of this thread inside the block from `generator`, not the global RNG."""
    token = _dropout_generator.set(generator)
    try:
        yield generator
    finally:
        _dropout_generator.reset(token)


class Dropout(nn.Dropout):
    """nn.Dropout whose masks come from the generator of `dropout_from` (outside one: torch's global RNG).

    The same draws and arithmetic as torch's CPU dropout: a generator seeded with s gives the masks that
    `torch.manual_seed(s)` gave. The global RNG is shared by every thread of a process; a generator is not.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        generator = _dropout_generator.get()
        if generator is None or not self.training or self.p == 0:
            return F.dropout(x, self.p, self.training, self.inplace)
        keep = torch.empty_like(x).bernoulli_(1 - self.p, generator=generator)  # same shape as x: 1 keeps
        return x.mul_(keep.div_(1 - self.p)) if self.inplace else x * keep.div_(1 - self.p)
