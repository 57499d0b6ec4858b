"""Interventions as the pages offer them: switches and heads with stable ids, labelled in the chosen language."""

from __future__ import annotations

from transformer_viz.trace.form import form_of
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.names import ATTENTION_KINDS

SWITCHES = ("no_positions", "no_scale", "no_look_ahead")  # stable ids; Intervention fields they turn off
SWITCH_FIELDS = {"no_positions": "positions", "no_scale": "scale", "no_look_ahead": "look_ahead"}


def head_ids(config) -> list[str]:
    """Every head of a model as "kind-layer-head", layers and heads counted from 1 as on screen."""
    return [f"{kind}-{layer + 1}-{head + 1}" for kind in form_of(config).kinds
            for layer in range(config.n_encoder_layers if ATTENTION_KINDS[kind].stack == "encoder"
                               else config.n_decoder_layers)
            for head in range(config.n_heads)]


def parse_head(head_id: str) -> tuple[str, int, int]:
    """"cross-2-1" -> ("cross", 1, 0): the trace's kind, layer and head, counted from 0."""
    kind, layer, head = head_id.rsplit("-", 2)
    return kind, int(layer) - 1, int(head) - 1


def intervention_of(switches, heads=(), ablation: str = "zero") -> Intervention:
    """The Intervention that turns off `switches` and ablates `heads` (ids that exist in the model)."""
    return Intervention(ablate_heads=frozenset(parse_head(h) for h in heads), ablation=ablation,
                        **{SWITCH_FIELDS[s]: False for s in switches})
