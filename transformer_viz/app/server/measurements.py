"""What Break it and Compare measure: exact match under an intervention, on fresh inputs; a model trained to cheat."""

from __future__ import annotations

import streamlit as st
import torch

from transformer_viz.analysis.architecture import toy_architecture
from transformer_viz.data.tasks import get_task
from transformer_viz.model import DecoderOnlyTransformer, Transformer, build_model
from transformer_viz.trace.intervention import Intervention
from transformer_viz.train.evaluation import Evaluation, evaluate
from transformer_viz.train.loop import train

EVALUATION_INPUTS = 200  # fresh inputs behind every exact match the Break-it and Compare pages show
RANKING_INPUTS = 100  # per head, when every head is ablated in turn
CHEAT_STEPS = 150  # training without the look-ahead mask: enough for the decoder to learn to copy the future


@st.cache_resource(max_entries=256, show_spinner=False)
def measured(model_id: str, task_name: str, intervention: Intervention, n: int = EVALUATION_INPUTS, *,
             _model: Transformer) -> Evaluation:
    """Exact match and teacher-forced accuracy of one model under one intervention on `n` fresh inputs:
    measured once per server (a class presses the same switches)."""
    return evaluate(_model, get_task(task_name), n=n, seed=7, intervention=intervention)


@st.cache_resource(max_entries=16, show_spinner=False)
def cheating_model(task_name: str, architecture: str = "encoder_decoder") -> Transformer | DecoderOnlyTransformer:
    """A fresh model trained without the look-ahead mask (deterministic: one per server, task and architecture; its
    weights and dropout come from seed 0's generators, never the global RNG other sessions' threads use)."""
    task = get_task(task_name)
    config = toy_architecture(architecture).task_config(task)
    model = build_model(config, generator=torch.Generator().manual_seed(0))
    train(model, task, steps=CHEAT_STEPS, seed=0, intervention=Intervention(look_ahead=False))
    return model.eval()

