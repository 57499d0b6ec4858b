"""The training loop, the evaluation and the CLI, on tiny models and a few steps (no real training here)."""

import json
import math
import random

import numpy as np
import pytest
import torch

from transformer_viz.data.tasks import get_task, model_config_for
from transformer_viz.data.tasks.base import make_batch
from transformer_viz.data.vocab import Vocab
from transformer_viz.model import Transformer
from transformer_viz.train.cli import main as cli_main
from transformer_viz.train.evaluation import evaluate
from transformer_viz.train.loop import StepInfo, batch_stream, lr_factor, train
from transformer_viz.weights.pretrained import load_pretrained


def tiny_model(task_name: str = "reverse", seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(model_config_for(get_task(task_name), d_model=16, n_heads=2, d_ff=32, layers=1))


def test_make_batch_follows_the_sequence_format():
    task = get_task("reverse")
    src, tgt_in, labels = make_batch(task, ["abc", "d"])
    a, b, c, d = (task.src_vocab.index(ch) for ch in "abcd")
    assert src.tolist() == [[a, b, c, Vocab.eos_id], [d, Vocab.eos_id, 0, 0]]
    assert tgt_in.tolist() == [[Vocab.bos_id, c, b, a], [Vocab.bos_id, d, 0, 0]]
    assert labels.tolist() == [[c, b, a, Vocab.eos_id], [d, Vocab.eos_id, 0, 0]]


def test_learning_rate_warms_up_then_decays_to_a_tenth():
    assert lr_factor(0, 100, 10) == pytest.approx(0.1)
    assert lr_factor(9, 100, 10) == pytest.approx(1.0)
    assert lr_factor(10, 100, 10) == pytest.approx(1.0)
    assert 0.1 < lr_factor(55, 100, 10) < 1.0
    assert lr_factor(100, 100, 10) == pytest.approx(0.1)


def test_batches_come_from_the_corpus_when_there_is_one_and_are_fresh_otherwise():
    task = get_task("en-fr")
    stream = batch_stream(task, 16, random.Random(0))
    corpus = set(task.training_inputs())
    assert all(text in corpus for _ in range(8) for text in next(stream))
    heldout = {get_task("en-fr").heldout_input(random.Random(1)) for _ in range(5)}
    assert heldout and not heldout & corpus
    reverse = batch_stream(get_task("reverse"), 64, random.Random(0))
    first, second = next(reverse), next(reverse)
    assert len(first) == 64 and first != second


def test_train_reports_every_step_and_snapshots_the_probe():
    model, task = tiny_model().eval(), get_task("reverse")
    seen: list[StepInfo] = []
    result = train(model, task, steps=5, batch_size=8, lr=1e-3, warmup=2, seed=0, on_step=seen.append,
                   snapshot_every=2)
    assert [info.step for info in seen] == [1, 2, 3, 4, 5] == [step for step, _, _ in result.history]
    assert all(math.isfinite(info.loss) and 0 <= info.accuracy <= 1 for info in seen)
    assert [s.step for s in result.snapshots] == [0, 2, 4, 5]
    assert [info.snapshot is not None for info in seen] == [False, True, False, True, True]
    snap = result.snapshots[-1]
    probe = task.examples[0]
    assert snap.src_tokens == (*probe, "<eos>") and snap.tgt_tokens == ("<bos>", *probe[::-1])
    assert snap.weights.shape == (1, 2, len(probe) + 1, len(probe) + 1)  # (layers, heads, tgt_len, src_len)
    np.testing.assert_allclose(snap.weights.sum(-1), 1.0, atol=1e-5)
    assert result.steps == 5 and not result.stopped_early and not model.training


def test_training_learns_more_than_the_alphabet():
    model, task = tiny_model("copy"), get_task("copy")
    history = train(model, task, steps=200, batch_size=16, lr=1e-2, warmup=5, seed=0).history
    # Guessing uniformly among the 26 letters costs ln 26 = 3.26 nats per token.
    assert np.mean([loss for _, loss, _ in history[:5]]) > math.log(26)
    assert np.mean([loss for _, loss, _ in history[-10:]]) < math.log(26) - 0.4


def test_training_is_deterministic_for_a_seed_and_leaves_the_global_rng_alone():
    runs = []
    for seed in (0, 0, 1):
        model = tiny_model("en-fr")  # dropout 0.1: the dropout masks must repeat too
        torch.manual_seed(123)
        result = train(model, get_task("en-fr"), steps=4, batch_size=8, lr=1e-3, warmup=1, seed=seed)
        after = torch.rand(1)
        runs.append((result.history, model.state_dict(), after))
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(runs[0][1][k], runs[1][1][k]) for k in runs[0][1])
    assert runs[0][0] != runs[2][0]
    torch.manual_seed(123)
    assert torch.equal(runs[0][2], torch.rand(1))  # training did not consume the caller's random numbers


def test_should_stop_ends_training_early():
    calls = []
    result = train(tiny_model(), get_task("reverse"), steps=50, batch_size=4, seed=0,
                   should_stop=lambda: calls.append(1) or len(calls) > 3)
    assert result.steps == 3 and result.stopped_early and len(result.history) == 3


def test_train_rejects_impossible_settings():
    with pytest.raises(ValueError, match="steps"):
        train(tiny_model(), get_task("reverse"), steps=0)


@pytest.mark.parametrize("settings, message", [
    ({"steps": "5"}, "steps must be a whole number of at least 1, got '5'"),
    ({"batch_size": 2.5}, "batch_size must be a whole number of at least 1, got 2.5"),
    ({"warmup": True}, "warmup must be a whole number of at least 0, got True"),
    ({"snapshot_every": -1}, "snapshot_every must be a whole number of at least 0, got -1"),
    ({"seed": None}, "seed must be a whole number, got None"),
    ({"lr": "1e-3"}, "lr must be a positive number, got '1e-3'"),
    ({"lr": float("nan")}, "lr must be a positive number, got nan"),
    ({"label_smoothing": 1.5}, r"label_smoothing must be a number from 0 to 1, got 1.5"),
])
def test_train_refuses_settings_of_the_wrong_kind(settings, message):
    with pytest.raises(ValueError, match=message):
        train(tiny_model(), get_task("reverse"), **{"steps": 1, "batch_size": 2, **settings})


def test_evaluate_reports_exact_match_and_per_layer_alignment():
    model, task = tiny_model("reverse").train(), get_task("reverse")
    metrics = evaluate(model, task, n=40, seed=3, batch_size=16)
    assert metrics.samples == 40 and 0 <= metrics.exact_match <= 1
    assert len(metrics.alignment_by_layer) == 1
    assert metrics.alignment_accuracy == max(metrics.alignment_by_layer)
    assert set(metrics.exact_match_by_length) <= set(range(1, task.max_input_len + 1))
    assert model.training  # evaluated in eval mode, then put back as it was


def test_evaluate_scores_a_model_that_is_right_by_construction():
    """A 'model' whose logits always pick the gold next token and whose cross-attention we cannot
    control scores exact match 1.0; one that always says <eos> scores 0."""
    task = get_task("copy")

    class Oracle(Transformer):
        def decode(self, tgt_ids, memory, src_mask):
            logits = super().decode(tgt_ids, memory, src_mask)
            src = self._src  # (batch, src_len): copy means target token j = source token j
            nxt = torch.cat([src, torch.full_like(src[:, :1], Vocab.pad_id)], dim=1)
            step = nxt[:, : tgt_ids.shape[1]]  # (batch, tgt_len)
            return torch.nn.functional.one_hot(step, logits.shape[-1]).float() * 100 + logits

        def encode(self, src_ids, src_token=None):
            self._src = src_ids
            return super().encode(src_ids, src_token)

    torch.manual_seed(0)
    oracle = Oracle(model_config_for(task, d_model=16, n_heads=2, d_ff=32, layers=1))
    assert evaluate(oracle, task, n=30, seed=0).exact_match == 1.0
    with torch.no_grad():
        silent = tiny_model("copy")
        silent.output_proj.bias.fill_(0).index_fill_(0, torch.tensor([Vocab.eos_id]), 1e3)
    assert evaluate(silent, task, n=30, seed=0).exact_match == 0.0


def test_cli_trains_saves_and_measures_a_model(tmp_path, capsys):
    assert cli_main(["--task", "copy", "--steps", "3", "--out", str(tmp_path), "--eval-samples", "20",
                           "--threads", "1"]) == 0
    meta = json.loads((tmp_path / "copy.json").read_text())
    assert meta["training"]["command"].startswith("python -m transformer_viz.train --task copy --steps 3")
    assert meta["training"]["steps_done"] == 3 and meta["metrics"]["samples"] == 20
    loaded = load_pretrained("copy", tmp_path)
    assert loaded.metrics == meta["metrics"]
    assert "copy: exact match" in capsys.readouterr().out


def test_cli_rejects_an_unknown_task(capsys):
    with pytest.raises(SystemExit):
        cli_main(["--task", "nope"])
    assert "Unknown task 'nope'" in capsys.readouterr().err


def test_cli_writes_into_the_working_directory_unless_told_and_names_the_files(tmp_path, monkeypatch, capsys):
    """Its default --out was the package's own folder: `--task reverse` overwrote the shipped model."""
    from transformer_viz.weights.pretrained import CHECKPOINT_DIR

    shipped = (CHECKPOINT_DIR / "copy.safetensors").read_bytes()
    monkeypatch.chdir(tmp_path)
    fast = ["--steps", "2", "--eval-samples", "5", "--threads", "1"]
    assert cli_main(["--task", "copy", *fast]) == 0
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["copy.json", "copy.safetensors"]
    assert (CHECKPOINT_DIR / "copy.safetensors").read_bytes() == shipped
    assert cli_main(["--task", "copy", "--name", "my_copy", "--out", str(tmp_path / "mine"), *fast]) == 0
    loaded = load_pretrained("my_copy", tmp_path / "mine")
    assert loaded.name == "my_copy" and loaded.task.name == "copy"
    assert "--name my_copy" in loaded.meta["training"]["command"]
    assert "my_copy: exact match" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--task", "copy", "--task", "sort", "--name", "both"], "--name names one checkpoint"),
    (["--task", "all", "--name", "every"], "--name names one checkpoint"),
    (["--task", "copy", "--name", "../Up"], "not a valid model name"),
])
def test_cli_refuses_a_name_it_cannot_use(args, message, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli_main([*args, "--out", str(tmp_path)])
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_cli_help_says_where_checkpoints_go(capsys):
    with pytest.raises(SystemExit):
        cli_main(["--help"])
    assert "./checkpoints in the working" in " ".join(capsys.readouterr().out.split())
