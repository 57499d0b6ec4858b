"""From text to a trace, for any model: `run_text` asks the model's Architecture; what a step decoded."""

from __future__ import annotations

import numpy as np

from transformer_viz.analysis.architecture import architecture_of
from transformer_viz.analysis.runs import TextRun
from transformer_viz.data.tasks import Task
from transformer_viz.model.sampling import Sampling, sampling_distribution
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.record import Trace


def run_text(model, task: Task | None, src_text: str, tgt_text: str | None = None,
             max_new_tokens: int | None = None, pad_to: int = 0, intervention: Intervention | None = None,
             sampling: Sampling | None = None) -> TextRun:
    """Run `src_text` (and `tgt_text`, if given, with teacher forcing) through `model` with a trace.

    Any model: the toy encoder-decoder reads `src_text` as its source, a decoder-only model as its prompt, and
    continues it. `pad_to` right-pads the input (and a teacher-forced target) with <pad> to that many positions,
    to show what the padding mask does. Raises ValueError with a readable sentence for text that is not a str,
    empty or too long; unknown tokens become <unk> and are listed in `TextRun.unknown`. The model runs under
    `intervention` (None: none). Without a target, the answer is decoded greedily, or drawn as `sampling` says
    (temperature 0: greedy, kept as None).
    """
    return architecture_of(model).run_text(model, task, src_text, tgt_text, max_new_tokens=max_new_tokens,
                                           pad_to=pad_to, intervention=intervention, sampling=sampling)


def next_token_probabilities(trace: Trace) -> np.ndarray:
    """Softmax of the last position's logits, batch item 0. -> (vocab,)"""
    return trace["logits"][0, -1].softmax(dim=-1).numpy()


def next_token_distributions(trace: Trace, sampling: Sampling | None) -> tuple[np.ndarray, np.ndarray]:
    """(before, after) of the last position, batch item 0, each (vocab,): the model's own distribution (softmax
    of the logits) and the one the token was drawn from under `sampling` (None: greedy, all on the argmax)."""
    logits = trace["logits"][0, -1]  # (vocab,)
    after = sampling_distribution(logits, Sampling(temperature=0) if sampling is None else sampling)  # (vocab,)
    return logits.softmax(dim=-1).numpy(), after.numpy()
