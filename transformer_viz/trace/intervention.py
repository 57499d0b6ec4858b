"""Interventions: change what a trained model computes without retraining it, to see what each part does.

`model.run_with_trace(src, tgt, intervention=Intervention(...))` (and `generate`, `train`, `evaluate`)
run under one; the trace keeps it as `trace.intervention`, so every figure can say what was changed.
Like recording, the active intervention is a context variable (`model/hooks.py`): one shared model serves
every caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from transformer_viz.trace.names import ATTENTION_KINDS

ABLATIONS = ("zero", "mean")


@dataclass(frozen=True)
class Intervention:
    """What to change; the defaults change nothing.

    ablate_heads: (kind, layer, head) triples, counting from 0 as trace names do; each head's output
      (its weighted sum of values) is replaced before W_O: by zeros, or with ablation="mean" by its mean
      over the query positions of this input.
    positions=False: no positional encoding is added. scale=False: scores are not divided by √d_k.
    look_ahead=False: the decoder's look-ahead mask is dropped (its padding mask stays).
    """

    ablate_heads: frozenset[tuple[str, int, int]] = field(default_factory=frozenset)
    ablation: str = "zero"
    positions: bool = True
    scale: bool = True
    look_ahead: bool = True

    def __post_init__(self) -> None:
        heads = self.ablate_heads
        if isinstance(heads, (str, bytes, Mapping)) or not isinstance(heads, Iterable):
            raise ValueError(f"ablate_heads must hold (kind, layer, head) triples, got {heads!r}.")
        try:
            heads = tuple(heads)  # read once: it may be an iterator
        except TypeError:  # iterable in name only (a 0-d tensor)
            raise ValueError(f"ablate_heads must hold (kind, layer, head) triples, got {heads!r}.") from None
        if not all(isinstance(h, tuple) and len(h) == 3 for h in heads):
            raise ValueError(f"ablate_heads must hold (kind, layer, head) triples, got {heads!r}.")
        for kind, layer, head in heads:
            if not isinstance(kind, str) or kind not in ATTENTION_KINDS:  # a list is no kind (nor hashable)
                raise ValueError(f"Unknown attention kind {kind!r} in ablate_heads; choose one of "
                                 f"{', '.join(ATTENTION_KINDS)}.")
            for what, value in (("layer", layer), ("head", head)):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"ablate_heads: {what} must be a whole number from 0, got {value!r}.")
        object.__setattr__(self, "ablate_heads", frozenset(heads))
        if self.ablation not in ABLATIONS:
            raise ValueError(f"ablation must be one of {', '.join(ABLATIONS)}, got {self.ablation!r}.")
        for switch in ("positions", "scale", "look_ahead"):
            if not isinstance(getattr(self, switch), bool):
                raise ValueError(f"{switch} must be True or False, got {getattr(self, switch)!r}.")

    @property
    def changes_nothing(self) -> bool:
        return self == Intervention()

    def heads_at(self, kind: str, layer: int) -> list[int]:
        """The heads ablated in attention `kind` of `layer`, sorted."""
        return sorted(h for k, layer_, h in self.ablate_heads if k == kind and layer_ == layer)

    def check_fits(self, config) -> None:
        """ValueError if a head to ablate does not exist in a model of `config`."""
        for kind, layer, head in sorted(self.ablate_heads):
            layers = config.n_encoder_layers if ATTENTION_KINDS[kind].stack == "encoder" else config.n_decoder_layers
            if layer >= layers or head >= config.n_heads:
                raise ValueError(f"ablate_heads: {kind} layer {layer}, head {head} does not exist in this model "
                                 f"({layers} layers, {config.n_heads} heads, counting from 0).")


NO_INTERVENTION = Intervention()
