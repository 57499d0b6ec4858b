"""Greedy decoding: ids, one trace per step, stopping at eos."""

import pytest
import torch
from helpers import make_model, random_ids


def test_each_step_is_the_argmax_of_a_full_forward_pass():
    model = make_model()
    src = random_ids(2, 5, 20, pad_tail=[0, 2])
    tgt_ids, steps = model.generate(src, max_new_tokens=6, bos_id=1, eos_id=2)
    assert tgt_ids[:, 0].tolist() == [1, 1]
    assert len(steps) == tgt_ids.shape[1] - 1
    for k, trace in enumerate(steps):
        prefix = tgt_ids[:, : k + 1]
        assert trace["logits"].shape[1] == k + 1
        assert torch.allclose(trace["logits"], model(src, prefix), atol=1e-6)
        assert "encoder.layers.0.self_attn.weights" in trace
        finished = (prefix[:, 1:] == 2).any(dim=1)
        chosen = trace["logits"][:, -1].argmax(-1)
        assert torch.equal(tgt_ids[~finished, k + 1], chosen[~finished])


def test_decoding_stops_once_every_row_has_emitted_eos():
    model = make_model()
    with torch.no_grad():
        model.output_proj.bias.fill_(0).index_fill_(0, torch.tensor([2]), 100.0)  # always predict eos
    tgt_ids, steps = model.generate(random_ids(1, 4, 20), max_new_tokens=10, bos_id=1, eos_id=2)
    assert tgt_ids.tolist() == [[1, 2]] and len(steps) == 1


def scripted(model, choices: list[list[int]]):
    """Make `model.decode` choose choices[row][step] at each greedy step (the model's own layers do not run)."""
    def decode(tgt_ids, memory, src_mask):
        step = tgt_ids.shape[1] - 1
        logits = torch.zeros(tgt_ids.shape[0], tgt_ids.shape[1], model.config.tgt_vocab_size)  # (batch, tgt_len, vocab)
        for row, row_choices in enumerate(choices):
            logits[row, -1, row_choices[step]] = 1.0
        return logits
    model.decode = decode
    return model


def test_rows_stop_at_their_own_eos_and_are_padded_after_it_until_every_row_has_one():
    # Row 0 writes <eos> (2) at once, then would write 7; row 1 writes 5, 6, then <eos>.
    model = scripted(make_model(), [[2, 7, 7, 7], [5, 6, 2, 7]])
    tgt_ids, steps = model.generate(random_ids(2, 4, 20), max_new_tokens=10, bos_id=1, eos_id=2)
    pad = model.config.pad_id
    assert tgt_ids.tolist() == [[1, 2, pad, pad], [1, 5, 6, 2]] and len(steps) == 3


def test_generation_never_runs_past_max_len():
    model = make_model(max_len=5)
    tgt_ids, _ = model.generate(random_ids(1, 4, 20), max_new_tokens=50, bos_id=1, eos_id=21)
    assert tgt_ids.shape[1] <= 5


def test_max_new_tokens_must_be_positive():
    with pytest.raises(ValueError, match="max_new_tokens"):
        make_model().generate(random_ids(1, 4, 20), max_new_tokens=0, bos_id=1, eos_id=2)


def test_keeping_only_the_last_step_keeps_the_same_trace():
    model = make_model()
    src = random_ids(1, 6, 20)
    ids, steps = model.generate(src, 8, bos_id=1, eos_id=2)
    same_ids, (last,) = model.generate(src, 8, bos_id=1, eos_id=2, keep_steps=False)
    assert torch.equal(ids, same_ids) and last.keys() == steps[-1].keys()
    assert all(torch.equal(last[name], steps[-1][name]) for name in last)


def test_without_sampling_or_at_temperature_zero_decoding_stays_greedy_bit_for_bit():
    from transformer_viz.model.sampling import Sampling

    model = make_model()
    src = random_ids(2, 6, 20, pad_tail=[0, 1])
    ids, steps = model.generate(src, 8, bos_id=1, eos_id=2)
    for sampling in (None, Sampling(temperature=0, top_k=3, top_p=0.5, seed=9)):
        same_ids, same_steps = model.generate(src, 8, bos_id=1, eos_id=2, sampling=sampling)
        assert torch.equal(same_ids, ids) and len(same_steps) == len(steps)
        for trace, same in zip(steps, same_steps, strict=True):
            assert trace.keys() == same.keys() and all(torch.equal(trace[name], same[name]) for name in trace)


def test_sampling_must_be_a_sampling():
    with pytest.raises(ValueError, match="sampling must be a Sampling"):
        make_model().generate(random_ids(1, 4, 20), 4, bos_id=1, eos_id=2, sampling={"temperature": 1.0})
