"""Text in, trace out: greedy, sampled and teacher-forced runs, padding as a batch would add it."""

import pytest
import torch

from transformer_viz import load_pretrained, run_text
from transformer_viz.analysis.inference import next_token_distributions
from transformer_viz.model.sampling import Sampling, sampling_distribution


@pytest.fixture(scope="module")
def reverse():
    return load_pretrained("reverse")


def test_greedy_run_decodes_and_covers_the_whole_answer(reverse):
    run = run_text(reverse.model, reverse.task, "stressed")
    assert run.output_text == "desserts" and not run.teacher_forced
    assert run.trace.tgt_tokens == ("<bos>", *"desserts")  # <bos> + answer: every row of every map
    assert run.output_tokens == (*"desserts", "<eos>")
    assert run.n_steps == len(run.output_tokens)
    assert run.step(run.n_steps - 1).tgt_tokens == run.trace.tgt_tokens  # the last step read <bos> + the answer


@pytest.mark.parametrize("padded", [0, 12])
def test_each_step_is_what_greedy_decoding_computed_at_that_step(reverse, padded):
    """A step is kept as a prefix of the last step's pass; compare it with generate's own trace of that step."""
    from transformer_viz.analysis.runs import pad_ids
    from transformer_viz.data.tasks import encode_source

    run = run_text(reverse.model, reverse.task, "stressed", pad_to=padded)
    source = encode_source(reverse.task, "stressed", reverse.model.config.max_len)
    src_ids, _ = pad_ids(source.ids, source.tokens, padded, reverse.model.config.pad_id)
    vocab = reverse.task.tgt_vocab
    _, steps = reverse.model.generate(src_ids, reverse.model.config.max_len - 1, vocab.bos_id, vocab.eos_id)
    assert len(steps) == run.n_steps
    for k, recorded in enumerate(steps):
        kept = run.step(k)
        assert kept.keys() == recorded.keys() and len(kept.tgt_tokens) == k + 1
        for name, tensor in recorded.items():
            assert kept[name].shape == tensor.shape, name
            torch.testing.assert_close(kept[name], tensor, rtol=1e-4, atol=1e-5, msg=name)


def test_each_step_of_a_sampled_run_is_what_sampling_drew_at_that_step(reverse):
    from transformer_viz.data.tasks import encode_source

    sampling = Sampling(temperature=2.0, top_k=4, top_p=0.95, seed=5)
    run = run_text(reverse.model, reverse.task, "stressed", sampling=sampling)
    assert run.sampling == sampling
    source = encode_source(reverse.task, "stressed", reverse.model.config.max_len)
    vocab = reverse.task.tgt_vocab
    ids, steps = reverse.model.generate(source.ids, reverse.model.config.max_len - 1, vocab.bos_id, vocab.eos_id,
                                        sampling=sampling)
    assert run.output_tokens == tuple(vocab.decode(ids[0])[1:]) and len(steps) == run.n_steps
    for k, recorded in enumerate(steps):
        torch.testing.assert_close(run.step(k)["logits"], recorded["logits"], rtol=1e-4, atol=1e-5)


def test_a_run_at_temperature_zero_is_the_greedy_run(reverse):
    greedy = run_text(reverse.model, reverse.task, "stressed")
    cold = run_text(reverse.model, reverse.task, "stressed", sampling=Sampling(temperature=0, top_k=2, seed=3))
    assert cold.sampling is None and greedy.sampling is None and cold.output_tokens == greedy.output_tokens


def test_the_distributions_of_a_step_are_the_softmax_and_what_the_token_was_drawn_from(reverse):
    sampling = Sampling(temperature=1.5, top_k=3, seed=1)
    run = run_text(reverse.model, reverse.task, "stressed", sampling=sampling)
    logits = run.step(2)["logits"][0, -1]
    before, after = next_token_distributions(run.step(2), sampling)
    torch.testing.assert_close(torch.from_numpy(before), logits.softmax(-1))
    torch.testing.assert_close(torch.from_numpy(after), sampling_distribution(logits, sampling))
    assert (after > 0).sum() <= 3 and after[reverse.task.tgt_vocab.index(run.output_tokens[2])] > 0
    _, greedy = next_token_distributions(run.step(2), None)
    assert greedy.tolist() == torch.nn.functional.one_hot(logits.argmax(), len(logits)).float().tolist()


def test_a_step_outside_the_run_is_refused(reverse):
    run = run_text(reverse.model, reverse.task, "stressed")
    for k in (-1, run.n_steps):
        with pytest.raises(ValueError, match="does not exist"):
            run.step(k)


def test_teacher_forcing_uses_the_given_target(reverse):
    run = run_text(reverse.model, reverse.task, "stressed", "abc")
    assert run.teacher_forced and run.output_text is None
    assert run.trace.tgt_tokens == ("<bos>", "a", "b", "c")
    assert run.trace["logits"].shape[1] == 4


def test_padding_the_input_changes_no_answer(reverse):
    plain = run_text(reverse.model, reverse.task, "hello")
    padded = run_text(reverse.model, reverse.task, "hello", pad_to=12)
    assert padded.trace.src_tokens == (*"hello", "<eos>", *["<pad>"] * 6)
    assert padded.output_text == plain.output_text == "olleh"
    weights = padded.trace["encoder.layers.0.self_attn.weights"]
    assert torch.all(weights[..., 6:] == 0)  # nobody looks at a <pad>
    assert torch.allclose(padded.trace["logits"], plain.trace["logits"], atol=1e-5)


def test_unknown_characters_are_listed_not_raised(reverse):
    run = run_text(reverse.model, reverse.task, "héllo")
    assert run.unknown == ("é",)
    assert "<unk>" in run.trace.src_tokens


@pytest.mark.parametrize("arguments, message", [
    ({"src_text": None}, r"The input must be text \(a str\), got None"),
    ({"src_text": 5}, r"The input must be text \(a str\), got 5"),
    ({"tgt_text": 5}, r"The target must be text \(a str\), got 5"),
    ({"tgt_text": b""}, r"The target must be text \(a str\), got b''"),
    ({"pad_to": "12"}, "pad_to must be a whole number of positions"),
    ({"pad_to": -1}, "pad_to must be a whole number of positions"),
    ({"max_new_tokens": 2.5}, "max_new_tokens must be a whole number"),
    ({"max_new_tokens": 0}, "max_new_tokens must be a whole number of at least 1, got 0"),
    ({"sampling": 1.0}, "sampling must be a Sampling"),
])
def test_arguments_of_the_wrong_kind_are_value_errors(reverse, arguments, message):
    with pytest.raises(ValueError, match=message):
        run_text(reverse.model, reverse.task, **{"src_text": "abc", **arguments})


def test_a_model_and_a_task_must_be_given_in_that_order(reverse):
    with pytest.raises(ValueError, match="model must be a Transformer"):
        run_text(reverse.task, reverse.model, "abc")
