"""Embedding and positional-encoding figures, read as data."""

import math

import numpy as np
import pytest
import torch
from helpers import make_model, scale_colours

from transformer_viz.figures.embeddings import (
    embedding_heatmap,
    embedding_pipeline,
    position_similarity,
    positional_curves,
    positional_variants,
)
from transformer_viz.model import encoding_tables, sinusoidal_concat_encoding, sinusoidal_encoding

SRC = ["the", "cat", "saw", "the", "dog"]  # "the" twice: must stay two rows
TGT = ["<bos>", "le", "chat"]


def traced(**overrides):
    model = make_model(**overrides)
    src = torch.tensor([[3, 5, 7, 3, 9]])
    tgt = torch.tensor([[1, 4, 6]])
    _, trace = model.run_with_trace(src, tgt)
    return trace.with_tokens(SRC, TGT)


def test_embedding_heatmap_rows_are_positions_with_tokens_as_ticks():
    matrix = np.arange(5 * 6, dtype=float).reshape(5, 6) - 10  # (positions, d_model)
    fig = embedding_heatmap(matrix, SRC, "Token embeddings")
    heatmap = fig.data[0]
    np.testing.assert_array_equal(heatmap.z, matrix)
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2, 3, 4]
    assert list(fig.layout.yaxis.ticktext) == SRC
    assert fig.layout.yaxis.autorange == "reversed"
    assert heatmap.zmin == -19 and heatmap.zmax == 19  # symmetric around 0
    low, middle, high = scale_colours(heatmap.colorscale, [0, 0.5, 1])
    assert low != high and sum(middle) > max(sum(low), sum(high))  # diverging: a light middle at 0
    assert heatmap.customdata[3, 0] == "“the”" and "dimension" in heatmap.hovertemplate
    assert fig.layout.title.text == "Token embeddings"


def test_positional_curves_label_sin_and_cos_and_mark_integer_positions():
    encoding = sinusoidal_encoding(12, 16)
    fig = positional_curves(encoding, [0, 1, 6])
    assert [trace.name for trace in fig.data] == ["dim 0 (sin)", "dim 1 (cos)", "dim 6 (sin)"]
    np.testing.assert_allclose(fig.data[2].y, encoding[:, 6].numpy())
    np.testing.assert_array_equal(fig.data[0].x, np.arange(12))
    assert all("markers" in trace.mode for trace in fig.data)
    assert len({trace.line.color for trace in fig.data}) == 3


def test_positional_curves_read_the_concat_layout():
    fig = positional_curves(sinusoidal_concat_encoding(10, 16), [0, 8])
    assert [trace.name for trace in fig.data] == ["dim 0 (sin)", "dim 8 (cos)"]


def test_position_similarity_is_cosine_with_fixed_range():
    encoding = sinusoidal_encoding(9, 16)
    fig = position_similarity(encoding)
    z = np.asarray(fig.data[0].z)
    unit = encoding.numpy() / np.linalg.norm(encoding.numpy(), axis=1, keepdims=True)
    np.testing.assert_allclose(z, unit @ unit.T, atol=1e-6)
    np.testing.assert_allclose(np.diag(z), 1.0, atol=1e-6)
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-1.0, 1.0)


def test_position_similarity_of_no_encoding_is_zero_not_nan():
    fig = position_similarity(np.zeros((4, 8)), tokens=["a", "b", "a", "c"])
    assert np.all(np.asarray(fig.data[0].z) == 0)
    assert list(fig.layout.xaxis.ticktext) == ["a", "b", "a", "c"]


def test_positional_variants_side_by_side():
    max_len, d_model = 20, 16
    fig = positional_variants(encoding_tables(max_len, d_model))
    paper, learned = np.asarray(fig.data[0].z), np.asarray(fig.data[3].z)
    np.testing.assert_allclose(paper, sinusoidal_encoding(max_len, d_model).numpy(), atol=1e-6)
    titles = [annotation.text for annotation in fig.layout.annotations]
    # The bug is named by what it is (the paper's PE(p, 2i) = sin(p / 10000^(2i/d))), not "BUG (seed 002)".
    assert "Wrong frequencies" in titles[2] and "4i/d, not 2i/d" in titles[2] and "Paper" in titles[0]
    assert not any("seed" in title or "BUG" in title for title in titles)
    colours = [annotation.font.color for annotation in fig.layout.annotations]
    assert colours[2] is not None and colours.count(colours[2]) == 1  # only the bug's title stands out
    assert all((trace.zmin, trace.zmax) == (-1.0, 1.0) for trace in fig.data)
    assert [trace.showscale for trace in fig.data] == [False, False, False, True]
    assert learned.shape == (max_len, d_model) and np.abs(learned).max() < 1
    without = {k: v for k, v in encoding_tables(max_len, d_model).items() if k != "learned_init"}
    assert len(positional_variants(without).data) == 3


def test_concat_variant_left_half_is_sin():
    max_len, d_model, half = 20, 16, 8
    concat = np.asarray(positional_variants(encoding_tables(max_len, d_model)).data[1].z)
    position = np.arange(max_len)[:, None]
    angle = position * np.exp(-np.arange(half) * math.log(10000) / (half - 1))
    np.testing.assert_allclose(concat[:, :half], np.sin(angle), atol=1e-5)
    np.testing.assert_allclose(concat[:, half:], np.cos(angle), atol=1e-5)


def test_seed002_bug_variant_doubles_the_exponent():
    max_len, d_model = 20, 16
    fig = positional_variants(encoding_tables(max_len, d_model))
    paper, bug = np.asarray(fig.data[0].z), np.asarray(fig.data[2].z)
    assert not np.allclose(paper, bug)
    np.testing.assert_allclose(bug[:, :2], paper[:, :2])  # i = 0: the same first pair
    i = 2  # the loop variable of the seed for dims 2 and 3
    np.testing.assert_allclose(bug[:, 2], np.sin(np.arange(max_len) / 10000 ** (2 * i / d_model)), atol=1e-6)
    # From the middle dimension on, the bug's sines barely move while the paper's still turn.
    assert np.abs(bug[:, d_model // 2]).max() < 0.01 < 0.1 < np.abs(paper[:, d_model // 2]).max()


def test_embedding_pipeline_panels_add_up():
    trace = traced()
    fig = embedding_pipeline(trace, "src")
    token, position, summed = (np.asarray(t.z) for t in fig.data)
    np.testing.assert_allclose(token, trace["src_embed.token"][0].numpy())
    np.testing.assert_allclose(position, trace["src_embed.position"].numpy())
    np.testing.assert_allclose(summed, trace["src_embed.out"][0].numpy(), atol=1e-6)
    limits = {(t.zmin, t.zmax) for t in fig.data}
    assert len(limits) == 1  # one shared colour range
    low, high = limits.pop()
    assert low == -high and high == pytest.approx(max(np.abs(token).max(), np.abs(summed).max(), 1.0))
    assert list(fig.layout.yaxis.ticktext) == SRC and list(fig.layout.yaxis.tickvals) == list(range(5))


def test_embedding_pipeline_shows_layernorm_and_scaling_when_enabled():
    trace = traced(embed_norm=True, scale_embeddings=True)
    fig = embedding_pipeline(trace, "tgt")
    assert len(fig.data) == 4
    np.testing.assert_allclose(np.asarray(fig.data[3].z), trace["tgt_embed.out"][0].numpy())
    titles = [annotation.text for annotation in fig.layout.annotations]
    assert "LayerNorm" in titles[3] and "√16" in titles[0]
    assert list(fig.layout.yaxis.ticktext) == ["&lt;bos&gt;", "le", "chat"]  # escaped, or Plotly drops "<bos>"
    assert fig.data[0].customdata[0, 0] == "“&lt;bos&gt;”"


def test_embedding_pipeline_rejects_unknown_side():
    with pytest.raises(ValueError, match="side"):
        embedding_pipeline(traced(), "memory")


def test_no_positional_encoding_is_said_in_the_figures_not_drawn_as_sine_curves():
    """With positional="none" the curves were zeros labelled "dim 0 (sin)" and the similarity plot was blank."""
    zeros = np.zeros((6, 8))
    for fig in (positional_curves(zeros, [0, 1], positional="none"), positional_curves(zeros, [0, 1]),
                position_similarity(zeros, positional="none"), position_similarity(zeros)):
        assert any("no positional encoding" in a.text for a in fig.layout.annotations), fig.layout.title.text
    assert [trace.name for trace in positional_curves(zeros, [0, 1], positional="none").data] == ["dim 0", "dim 1"]
    zh = positional_curves(zeros, [0], positional="none", lang="zh")
    assert "不加位置编码" in zh.layout.annotations[0].text and zh.data[0].name == "维度 0"
    assert not position_similarity(sinusoidal_encoding(6, 8)).layout.annotations  # a real encoding: no note


def test_a_learned_encoding_is_labelled_learned_not_sin_or_cos():
    table = sinusoidal_encoding(8, 8)  # a learned table may look like anything, even like sines
    fig = positional_curves(table, [0, 1], positional="learned")
    assert [trace.name for trace in fig.data] == ["dim 0 (learned)", "dim 1 (learned)"]
    assert "Learned" in fig.layout.title.text and not fig.layout.annotations
    assert positional_curves(table, [0], positional="learned", lang="zh").data[0].name == "维度 0（可学习）"
    with pytest.raises(ValueError, match="positional must be one of"):
        positional_curves(table, [0], positional="alibi")
