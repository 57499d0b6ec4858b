"""Tasks as language modelling for decoder-only models: the one-sequence format, its labels and padding, training,
evaluation and the CLI's decoder-only checkpoints; the induction task and its measures."""

import json

import pytest
import torch

from transformer_viz.analysis.induction import fresh_measures, measure, phase_change, repeated_sequences
from transformer_viz.config import ModelConfig
from transformer_viz.data.tasks import get_task
from transformer_viz.data.tasks.lm import encode_prompt, lm_batch, lm_config, lm_vocab, sequence
from transformer_viz.data.vocab import Vocab
from transformer_viz.model import DecoderOnlyTransformer, build_model
from transformer_viz.train import cli
from transformer_viz.train.evaluation import evaluate
from transformer_viz.train.loop import train
from transformer_viz.weights.pretrained import load_pretrained

REVERSE, INDUCTION = get_task("reverse"), get_task("induction")


def tokens(task, ids):
    return lm_vocab(task).decode(ids)


def test_a_prompt_and_its_answer_are_one_sequence_scored_on_the_answer_only():
    ids, labels = sequence(REVERSE, list("abc"))
    assert tokens(REVERSE, ids) == ["<bos>", "a", "b", "c", "=", "c", "b", "a"]
    # Position t predicts token t + 1: "=" writes the answer's first letter, the last one <eos>; the prompt's
    # positions count nothing.
    assert tokens(REVERSE, labels) == ["<pad>", "<pad>", "<pad>", "<pad>", "c", "b", "a", "<eos>"]


def test_a_given_answer_is_the_one_scored():
    ids, labels = sequence(REVERSE, list("abc"), answer=list("cb"))
    assert tokens(REVERSE, ids) == ["<bos>", "a", "b", "c", "=", "c", "b"]
    assert tokens(REVERSE, labels) == ["<pad>", "<pad>", "<pad>", "<pad>", "c", "b", "<eos>"]


def test_a_typed_separator_or_unknown_letter_is_read_as_unk_in_the_prompt():
    prompt = encode_prompt(REVERSE, "a=b?")
    assert prompt.tokens == ("<bos>", "a", "<unk>", "b", "<unk>", "=")
    assert prompt.unknown == ("=", "?")


def test_padding_a_batch_never_changes_a_real_position():
    model = DecoderOnlyTransformer(lm_config(REVERSE), generator=torch.Generator().manual_seed(0)).eval()
    ids, labels = lm_batch(REVERSE, ["abcdef", "ab"])  # the second row is padded on the right
    alone, _ = lm_batch(REVERSE, ["ab"])
    assert (ids[1, alone.shape[1]:] == Vocab.pad_id).all() and (labels[1, alone.shape[1]:] == Vocab.pad_id).all()
    with torch.no_grad():
        padded, unpadded = model(ids)[1, : alone.shape[1]], model(alone)[0]
    torch.testing.assert_close(padded, unpadded)


def test_a_decoder_only_model_learns_reverse_and_is_evaluated_on_its_answers():
    config = lm_config(REVERSE, d_model=32, n_heads=2, d_ff=64)
    model = build_model(config, generator=torch.Generator().manual_seed(0))
    before = evaluate(model, REVERSE, n=60, seed=3)
    result = train(model, REVERSE, steps=300, batch_size=32, lr=3e-3, warmup=20, seed=1, snapshot_every=300)
    after = evaluate(model, REVERSE, n=60, seed=3)
    last_losses = [loss for _, loss, _ in result.history[-20:]]
    assert sum(last_losses) / len(last_losses) < 0.6 * result.history[0][1]
    assert after.teacher_forced_accuracy > before.teacher_forced_accuracy + 0.25
    # The snapshot is the probe's self-attention: rows and columns are the same tokens, prompt then answer.
    snapshot = result.snapshots[-1]
    assert snapshot.src_tokens == snapshot.tgt_tokens and "=" in snapshot.src_tokens
    assert snapshot.weights.shape == (2, 2, len(snapshot.src_tokens), len(snapshot.src_tokens))


def test_the_cli_trains_saves_and_reloads_a_decoder_only_checkpoint(tmp_path, capsys):
    assert cli.main(["--task", "copy", "--architecture", "decoder_only", "--steps", "3", "--eval-samples", "8",
                     "--threads", "1", "--out", str(tmp_path)]) == 0
    meta = json.loads((tmp_path / "copy-gpt.json").read_text(encoding="utf-8"))
    assert meta["config"]["architecture"] == "decoder_only"
    assert "--architecture decoder_only" in meta["training"]["command"]
    loaded = load_pretrained("copy-gpt", tmp_path)
    assert isinstance(loaded.model, DecoderOnlyTransformer)
    assert "copy-gpt: exact match" in capsys.readouterr().out


def test_the_cli_records_the_induction_models_training_curve_and_its_heads(tmp_path):
    assert cli.main(["--task", "induction", "--architecture", "decoder_only", "--steps", "50", "--eval-samples", "8",
                     "--threads", "1", "--out", str(tmp_path)]) == 0
    meta = json.loads((tmp_path / "induction-gpt.json").read_text(encoding="utf-8"))
    curve = meta["training"]["induction_curve"]
    assert [point["step"] for point in curve] == [0, 25, 50]
    assert len(curve[-1]["induction"]) == 2 and len(curve[-1]["induction"][0]) == meta["config"]["n_heads"]
    assert {"loss_drop_step", "induction_rise_step"} <= set(meta["training"])
    fresh = meta["metrics"]["induction"]
    assert fresh["best_score"] == max(max(heads) for heads in fresh["induction"]) and fresh["sequences"] == 256


def test_the_cli_refuses_the_induction_task_for_an_encoder_decoder(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--task", "induction", "--steps", "1"])
    assert "--architecture decoder_only" in capsys.readouterr().err


def test_attention_only_layers_have_no_feed_forward_and_pass_the_stream_on():
    config = lm_config(INDUCTION)
    assert config.attention_only and config.n_decoder_layers == 2
    model = DecoderOnlyTransformer(config, generator=torch.Generator().manual_seed(0))
    assert not any("ffn" in key for key in model.state_dict())
    _, trace = model.run_with_trace(repeated_sequences(INDUCTION, 2, seed=0)[0])
    torch.testing.assert_close(trace["decoder.layers.0.resid_post"], trace["decoder.layers.0.resid_mid"])
    with pytest.raises(ValueError, match="decoder-only"):
        ModelConfig(src_vocab_size=8, tgt_vocab_size=8, attention_only=True)


def test_the_induction_task_is_one_stream_repeated_and_every_next_token_counts():
    ids, labels = sequence(INDUCTION, list("qwe"))
    assert tokens(INDUCTION, ids) == ["<bos>", "q", "w", "e", "q", "w"]
    assert tokens(INDUCTION, labels) == ["q", "w", "e", "q", "w", "e"]
    assert encode_prompt(INDUCTION, "qwe").tokens == ("<bos>", "q", "w", "e", "q")  # the cue: the first letter again
    assert INDUCTION.gold(list("qwe")) == (["w", "e"], [(1, 0), (2, 1)])


class AttentionOf:
    """A stand-in model whose every head attends as `pattern(query) -> key` says (one-hot), with uniform logits."""

    def __init__(self, pattern, layers=2, heads=2, vocab=31):
        self.config = ModelConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, n_decoder_layers=layers, n_heads=heads,
                                  architecture="decoder_only")
        self.pattern = pattern

    def run_with_trace(self, ids):
        batch, length = ids.shape
        weights = torch.zeros(batch, self.config.n_heads, length, length)  # (batch, heads, length, length)
        for query in range(length):
            weights[:, :, query, self.pattern(query)] = 1.0
        trace = {f"decoder.layers.{i}.self_attn.weights": weights for i in range(self.config.n_decoder_layers)}
        return torch.zeros(batch, length, self.config.tgt_vocab_size), trace


def test_the_induction_score_is_one_for_a_head_that_looks_right_after_the_earlier_occurrence():
    ids, n = repeated_sequences(INDUCTION, 3, seed=0, letters=10)
    assert torch.equal(ids[:, n + 1:], ids[:, 1:n])  # the repeat (but its last letter) is the first half again
    induction = measure(AttentionOf(lambda q: q - n + 1 if q > n else 0), ids, n)
    assert induction.induction == [[1.0, 1.0], [1.0, 1.0]]
    assert induction.previous_token == [[0.0, 0.0], [0.0, 0.0]]
    previous = measure(AttentionOf(lambda q: max(q - 1, 0)), ids, n)
    assert previous.previous_token == [[1.0, 1.0], [1.0, 1.0]] and previous.induction == [[0.0, 0.0], [0.0, 0.0]]


def test_the_phase_change_is_where_the_loss_falls_and_the_score_rises_fastest():
    # Early on both halves' losses fall together (common letters): not in-context learning.
    curve = [{"step": s, "loss_first_half": first, "loss_repeat": repeat, "induction": [[score]]}
             for s, first, repeat, score in ((0, 6.0, 6.0, 0.1), (50, 3.3, 3.2, 0.1), (100, 3.3, 1.0, 0.8),
                                             (150, 3.2, 0.4, 0.9))]
    assert phase_change(curve) == {"loss_drop_step": 100, "induction_rise_step": 100}


def test_the_shipped_induction_model_has_an_induction_head_and_its_phase_change_on_record():
    loaded = load_pretrained("induction-gpt")
    assert loaded.model.config.attention_only and loaded.model.config.positional == "rotary"
    fresh = fresh_measures(loaded.model, INDUCTION, seed=777)  # not the CLI's seed
    assert fresh["best_head"][0] == 1 and fresh["best_score"] >= 0.9  # a head of layer 2 copies
    assert max(fresh["previous_token"][0]) > 5 * max(fresh["previous_token"][1])  # the other half: layer 1
    assert fresh["loss_repeat"] < fresh["loss_first_half"] / 100  # in context, the repeat is all but certain
    training = loaded.meta["training"]
    every = training["induction_curve"][1]["step"]
    assert abs(training["loss_drop_step"] - training["induction_rise_step"]) <= 2 * every
    assert loaded.meta["metrics"]["exact_match"] >= 0.99
