"""The one generation loop of both toy models: a token at a time, each row until its <eos>, then <pad>.

The encoder-decoder starts from <bos> and reads its memory at every step; the decoder-only model starts from its
prompt. Both hand the loop a `step` (ids so far -> logits) and the ids to start from; the loop chooses each next
token (greedy, or drawn as `Sampling` says), pads a row after its <eos>, stops when every row has ended or
`max_new_tokens` are written, and keeps one record per step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from transformer_viz.config import is_whole
from transformer_viz.model.hooks import recording
from transformer_viz.model.sampling import Sampling, next_tokens


def check_generation(max_new_tokens: object, eos_id: object, sampling: object) -> None:
    """ValueError, in a sentence, for settings no loop can use."""
    if not is_whole(max_new_tokens) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a whole number of at least 1, got {max_new_tokens!r}.")
    if not is_whole(eos_id):
        raise ValueError(f"eos_id must be a whole token id, got {eos_id!r}.")
    if sampling is not None and not isinstance(sampling, Sampling):
        raise ValueError(f"sampling must be a Sampling (or None for greedy decoding), "
                         f"got {type(sampling).__name__}.")


def generation_loop(step: Callable[[torch.Tensor], torch.Tensor], start: torch.Tensor, max_new_tokens: int,
                    eos_id: int, pad_id: int, *, sampling: Sampling | None = None, keep_steps: bool = True,
                    recorded_first: Mapping[str, torch.Tensor] | None = None,
                    ) -> tuple[torch.Tensor, list[dict[str, torch.Tensor]]]:
    """Continue `start` (batch, start_len) one token at a time -> (ids (batch, start_len + n), the tensors recorded
    at each step).

    `step(ids)` returns the logits (batch, length, vocab) of the ids so far; the last position's choose the next
    token. A row that wrote `eos_id` writes `pad_id` from then on; the loop ends when every row has written it, or
    after `max_new_tokens`. Each step's record starts from `recorded_first` (the encoder's tensors, recorded once);
    with `keep_steps=False` only the last step's is kept. Run it under no_grad and the caller's intervention.
    """
    generator = None if sampling is None else sampling.generator()
    ids, steps = start, []
    finished = torch.zeros(start.shape[0], dtype=torch.bool)  # (batch,)
    for _ in range(max_new_tokens):
        with recording(dict(recorded_first or {})) as tensors:
            logits = step(ids)  # (batch, length, vocab)
        if not keep_steps:
            steps.clear()  # one step's tensors at a time when only the last is kept
        steps.append(tensors)
        next_ids = next_tokens(logits[:, -1], sampling, generator)  # (batch,)
        next_ids = next_ids.masked_fill(finished, pad_id)  # (batch,)
        ids = torch.cat([ids, next_ids[:, None]], dim=1)  # (batch, length + 1)
        finished |= next_ids == eos_id
        if finished.all():
            break
    return ids, steps
