"""The facts the lesson's steps reveal (transformer_viz/lessons/), against hand or independent computations."""

import math

import numpy as np
import pytest
import torch

from transformer_viz import Transformer
from transformer_viz.analysis.inference import run_text
from transformer_viz.data.tasks import TASKS, model_config_for
from transformer_viz.figures.colours import HIGHLIGHT, MUTED
from transformer_viz.i18n import text
from transformer_viz.lessons.cross import strongest_key
from transformer_viz.lessons.embeddings import equal_token_rows
from transformer_viz.lessons.heads import head_patterns, heads_answer, strongest_pattern
from transformer_viz.lessons.masks import blocked_by_padding_only
from transformer_viz.lessons.positions import shuffle_difference
from transformer_viz.lessons.scaling import softmax_entropy
from transformer_viz.lessons.tokens import bpe_chart
from transformer_viz.lessons.training import last_layer_mirror, mirror_mass, start_figure
from transformer_viz.trace.names import attention_name
from transformer_viz.weights.pretrained import load_pretrained


@pytest.fixture(scope="module")
def reverse_model():
    return load_pretrained("reverse").model


def test_head_patterns_are_the_diagonals_and_the_first_column(reverse_model):
    trace = run_text(reverse_model, TASKS["reverse"], "hello").trace
    weights = trace[attention_name("decoder_self", 1, "weights")][0].double().numpy()  # (heads, q, k)
    patterns = head_patterns(trace, "decoder_self", 1)
    for h in range(weights.shape[0]):
        w = weights[h]
        assert patterns["same"][h] == pytest.approx(np.mean([w[i, i] for i in range(len(w))]))
        assert patterns["previous"][h] == pytest.approx(np.mean([w[i, i - 1] for i in range(1, len(w))]))
        assert patterns["first"][h] == pytest.approx(np.mean(w[1:, 0]))


def test_strongest_key_is_the_argmax_of_the_row(reverse_model):
    trace = run_text(reverse_model, TASKS["reverse"], "hello").trace
    row = trace[attention_name("cross", 1, "weights")][0, 2, 3]
    assert strongest_key(trace, "cross", 1, 2, 3) == int(np.argmax(row.numpy()))


def test_the_shipped_reverse_model_mirrors_and_a_random_one_does_not(reverse_model):
    task = TASKS["reverse"]
    trace = run_text(reverse_model, task, "hello", "olleh").trace
    assert all(mirror_mass(trace, 1, h) > 0.9 for h in range(4))
    torch.manual_seed(0)
    fresh = Transformer(model_config_for(task)).eval()
    trace = run_text(fresh, task, "hello", "olleh").trace
    assert mirror_mass(trace, 1, 0) < 0.4


def test_mirror_mass_of_a_perfect_mirror_is_one(reverse_model):
    trace = run_text(reverse_model, TASKS["reverse"], "abc", "cba").trace
    weights = torch.zeros_like(trace[attention_name("cross", 0, "weights")])  # (1, heads, 4, 4)
    for i in range(3):
        weights[0, :, i, 2 - i] = 1.0
    forged = dict(trace.items()) | {attention_name("cross", 0, "weights"): weights}
    assert mirror_mass(type(trace)(forged, trace.config, trace.src_tokens, trace.tgt_tokens), 0, 0) == 1.0


def test_two_equal_tokens_share_an_embedding_but_not_an_input(reverse_model):
    trace = run_text(reverse_model, TASKS["reverse"], "hello").trace
    token, total = equal_token_rows(trace, 2, 3)  # the two l's
    assert token == 0.0 and total > 0.1
    token, _ = equal_token_rows(trace, 0, 1)  # h and e
    assert token > 0.1


@pytest.mark.parametrize("task_name,text", [("reverse", "hello"), ("en-fr", "the black cat sees the small dog")])
def test_without_positions_a_shuffle_only_reorders_the_encoder_outputs(task_name, text):
    task = TASKS[task_name]
    n = len(task.split(text))
    order = list(np.random.default_rng(0).permutation(n))
    torch.manual_seed(0)
    blind = Transformer(model_config_for(task, positional="none")).eval()
    assert shuffle_difference(blind, task, text, order) < 1e-5
    torch.manual_seed(0)
    seeing = Transformer(model_config_for(task, positional="sinusoidal")).eval()
    assert shuffle_difference(seeing, task, text, order) > 0.05
    with pytest.raises(ValueError, match="reorder"):
        shuffle_difference(blind, task, text, [0] * n)


def test_softmax_entropy_saturates_without_scaling():
    scaled = softmax_entropy([4, 64, 512], 8, scaled=True, samples=500)
    unscaled = softmax_entropy([4, 64, 512], 8, scaled=False, samples=500)
    assert np.all(scaled <= math.log2(8)) and np.all(scaled > 2.2)  # near uniform at every width
    assert unscaled[0] > unscaled[1] > unscaled[2] and unscaled[2] < 0.3  # towards one key
    assert softmax_entropy([16], 1, scaled=False)[0] == 0.0  # one key: nothing to spread over


def test_softmax_entropy_matches_a_direct_computation():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2000, 1, 16, generator=generator, dtype=torch.float64)
    k = torch.randn(2000, 5, 16, generator=generator, dtype=torch.float64)
    p = torch.softmax((q @ k.transpose(1, 2)).squeeze(1) / 4.0, dim=-1)
    expected = float((-(p * torch.log2(p)).sum(-1)).mean())
    assert softmax_entropy([16], 5, scaled=True)[0] == pytest.approx(expected)


def test_padding_blocks_the_pad_keys_on_and_under_the_diagonal(reverse_model):
    trace = run_text(reverse_model, TASKS["reverse"], "hello", "olleh", pad_to=8).trace
    # <bos> o l l e h <pad> <pad>: rows 6 and 7 may look at the pads by look-ahead: 1 + 2 cells, two on the diagonal
    assert trace.tgt_tokens.count("<pad>") == 2
    assert blocked_by_padding_only(trace) == [(6, 6), (7, 6), (7, 7)]
    assert blocked_by_padding_only(run_text(reverse_model, TASKS["reverse"], "hello", "olleh").trace) == []


def test_the_strongest_pattern_is_the_largest_weight_of_any_head_and_pattern():
    patterns = {"same": np.array([0.4, 0.1, 0.2]), "previous": np.array([0.3, 0.6, 0.2]),
                "first": np.array([0.1, 0.2, 0.5])}
    assert strongest_pattern(patterns) == (1, "previous", 0.6)
    assert strongest_pattern(patterns | {"first": np.array([0.1, 0.2, 0.7])}) == (2, "first", 0.7)


class EnglishHost:
    """Just the words of a Host (lessons.step.Host), for what a step composes from them."""

    lang = "en"

    def text(self, key: str, /, **values) -> str:
        return text(key, "en", **values)


def test_the_heads_answer_names_the_clearest_pattern_and_what_no_head_does():
    patterns = {"same": np.array([0.3, 0.1, 0.9]), "previous": np.array([0.6, 0.2, 0.05]),
                "first": np.array([0.1, 0.4, 0.05])}
    paragraphs = heads_answer(EnglishHost(), patterns).split("\n\n")
    assert paragraphs == [
        "Head 1: on average 60% of a query's weight goes to the word just before it (the other heads: 2: 20%, 3: 5%).",
        "The clearest pattern in this layer: head 3, the word itself (90% of a query's weight on average).",
        "No head looks mostly at the first position: at most 40% (head 2)."]
    patterns["same"][2] = 0.3
    assert heads_answer(EnglishHost(), patterns).split("\n\n")[1:] == [
        "That is the clearest pattern in this layer.", "No head looks mostly at the word itself: at most 30% (head 1).",
        "No head looks mostly at the first position: at most 40% (head 2)."]


def test_the_unmarked_bpe_figure_keeps_the_bars_and_names_no_next_merge():
    corpus = " ".join(["yes"] * 7 + ["highest"] * 3 + ["high"] * 9)  # seed 003's example: three pairs tie
    marked = bpe_chart(corpus, 0, lang="en", width=900)
    unmarked = bpe_chart(corpus, 0, lang="en", width=900, marked=False)
    bars, plain = (next(t for t in fig.data if t.type == "bar") for fig in (marked, unmarked))
    assert bars.marker.color[0] == HIGHLIGHT and plain.marker.color == MUTED
    assert (plain.x, plain.y) == (bars.x, bars.y)  # the same pairs and counts, in the same order
    assert plain.text == tuple(str(count) for count in bars.x) and plain.textposition == "outside"
    hidden = " ".join(plain.customdata) + " ".join(a.text for a in unmarked.layout.annotations)
    assert "next merge" not in hidden and "top one" not in hidden, hidden
    assert "Adjacent pairs and how often they occur" in [a.text for a in unmarked.layout.annotations]


def test_the_start_of_training_is_the_last_layers_mean_cross_attention(reverse_model):
    trace = run_text(reverse_model, TASKS["reverse"], "hello", "olleh").trace
    fig = start_figure(trace, lang="en", title="start")
    expected = trace[attention_name("cross", 1, "weights")][0].mean(0).numpy()
    assert np.allclose(fig.data[0].z, expected)
    assert last_layer_mirror(trace) == pytest.approx(np.mean([mirror_mass(trace, 1, h) for h in range(4)]))


def test_mean_entropy_is_zero_for_one_hot_rows_and_log2_n_for_uniform_ones(reverse_model):
    from transformer_viz.analysis.measures import mean_entropy

    trace = run_text(reverse_model, TASKS["reverse"], "abc", "cba").trace
    name = attention_name("cross", 0, "weights")
    uniform = torch.full_like(trace[name], 1 / trace[name].shape[-1])
    one_hot = torch.zeros_like(trace[name])
    one_hot[..., 0] = 1.0
    for weights, expected in ((uniform, math.log2(uniform.shape[-1])), (one_hot, 0.0)):
        forged = {n: t for n, t in trace.items() if "cross_attn" not in n or ".0." in n} | {name: weights}
        forged = type(trace)(forged, None, trace.src_tokens, trace.tgt_tokens)
        assert mean_entropy(forged, "cross") == pytest.approx(expected)
