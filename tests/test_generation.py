"""The one generation loop (model/generation.py) both toy models decode with, on a scripted model: each row stops
at its own <eos> and is padded after it, the loop runs until every row has ended, and both models use it."""

from dataclasses import replace

import torch
from helpers import make_model

from transformer_viz.model import DecoderOnlyTransformer
from transformer_viz.model.generation import generation_loop

PAD, EOS, VOCAB = 0, 2, 8
# What each row would write at each step if asked: row 0 ends at step 1, row 1 at step 3 (then garbage: 5, 6, 7).
SCRIPT = [[4, EOS, 5, 6, 7], [3, 4, 5, EOS, 7]]


def scripted(ids: torch.Tensor) -> torch.Tensor:
    """Logits (batch, length, vocab) whose last position picks SCRIPT[row][step], step = what was written so far."""
    step = ids.shape[1] - 1
    logits = torch.zeros(ids.shape[0], ids.shape[1], VOCAB)  # (batch, length, vocab)
    for row in range(ids.shape[0]):
        logits[row, -1, SCRIPT[row][step]] = 1.0
    return logits


def test_each_row_stops_at_its_own_eos_and_is_padded_after_it():
    ids, steps = generation_loop(scripted, torch.ones(2, 1, dtype=torch.int64), 5, EOS, PAD)
    assert ids.tolist() == [[1, 4, EOS, PAD, PAD], [1, 3, 4, 5, EOS]]  # row 0: <pad> after its <eos>, never 5, 6
    assert len(steps) == 4  # until the last row ended, not the first


def test_the_loop_stops_when_every_row_has_ended_or_the_budget_is_spent():
    ids, steps = generation_loop(scripted, torch.ones(2, 1, dtype=torch.int64), 2, EOS, PAD)
    assert ids.tolist() == [[1, 4, EOS], [1, 3, 4]] and len(steps) == 2
    ids, steps = generation_loop(scripted, torch.ones(1, 1, dtype=torch.int64), 5, EOS, PAD)
    assert ids.tolist() == [[1, 4, EOS]] and len(steps) == 2  # one row: it ends at once


def test_keep_steps_false_keeps_the_last_steps_record_only():
    _, steps = generation_loop(scripted, torch.ones(2, 1, dtype=torch.int64), 5, EOS, PAD, keep_steps=False)
    assert len(steps) == 1


def test_both_toy_models_decode_with_the_one_loop(monkeypatch):
    """Both models' `generate` hand the loop their step: a scripted loop's ids come back from each."""
    import transformer_viz.model.decoder_only as decoder_only
    import transformer_viz.model.transformer as transformer

    calls = []

    def loop(step, start, *args, **kwargs):
        calls.append(start.shape)
        return start, []

    monkeypatch.setattr(transformer, "generation_loop", loop)
    monkeypatch.setattr(decoder_only, "generation_loop", loop)
    encoder_decoder = make_model()
    encoder_decoder.generate(torch.ones(1, 3, dtype=torch.int64), 4, 1, 2)
    DecoderOnlyTransformer(replace(encoder_decoder.config, architecture="decoder_only")).generate(
        torch.ones(1, 3, dtype=torch.int64), 4, 2)
    assert calls == [(1, 1), (1, 3)]  # the encoder-decoder starts from <bos>, the decoder-only from its prompt
