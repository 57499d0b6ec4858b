"""Figures of figures/layers.py and figures/rollout.py as data: values, titles in both languages, escaped tokens."""

import json

import numpy as np
import pytest
from helpers import layered_trace, make_model, random_ids, real_trace
from test_chinese_everywhere import english_words, figure_texts

from transformer_viz import Vocab
from transformer_viz.analysis.measures import (
    LogitLens,
    alignment_scores,
    attention_rollout,
    head_scores,
    logit_lens,
    residual_norms,
)
from transformer_viz.figures.layers import ffn_figure, logit_lens_figure, residual_figure
from transformer_viz.figures.rollout import head_score_table, rollout_figure

SRC = ["<s>", "a&b", "c", "<eos>"]  # tokens that are markup unless escaped
TGT = ["<bos>", "x", "<y>"]


def model_trace(**overrides):
    model = make_model(**overrides)
    _, trace = model.run_with_trace(random_ids(1, 4, 20), random_ids(1, 3, 22))
    return model, trace.with_tokens(SRC, TGT)


def assert_chinese(fig, tokens=()):
    """Every word the figure draws in 中文 is Chinese, a token or a formula symbol."""
    texts = figure_texts(json.loads(fig.to_json()))
    assert texts and not {t: w for t in texts if (w := english_words(t, tokens))}


# residual_figure ---------------------------------------------------------------------------------------------------

def test_residual_figure_draws_the_norms_per_layer_with_one_legend_entry_each():
    _, trace = model_trace()
    fig = residual_figure(trace, "decoder")
    norms = residual_norms(trace, "decoder")
    assert len(fig.data) == 2 * (3 + 2)  # per layer: 3 bars (sublayers) + 2 lines (entering, after)
    bars = [t for t in fig.data if t.type == "bar"]
    np.testing.assert_allclose(bars[0].y, norms["self_attn"][0])
    np.testing.assert_allclose(bars[5].y, norms["ffn"][1])
    lines = [t for t in fig.data if t.type == "scatter"]
    np.testing.assert_allclose(lines[3].y, norms["resid_post"][1])
    assert [t.name for t in fig.data if t.showlegend] == [
        "change by self-attention", "change by cross-attention", "change by the feed-forward",
        "‖stream‖ entering the layer", "‖stream‖ after the layer"]
    assert list(fig.layout.xaxis2.ticktext) == ["&lt;bos&gt;", "x", "&lt;y&gt;"]
    assert fig.layout.title.text.startswith("Residual stream of the decoder") and "pre-LN" in fig.layout.title.text
    encoder = residual_figure(model_trace(norm_first=False)[1], "encoder")
    assert len(encoder.data) == 2 * (2 + 2) and "post-LN" in encoder.layout.title.text
    json.dumps(fig.to_plotly_json(), default=str)


def test_residual_figure_in_chinese():
    fig = residual_figure(model_trace()[1], "decoder", lang="zh")
    assert fig.layout.title.text.startswith("解码器的残差流")
    assert_chinese(fig, SRC + TGT)


# ffn_figure --------------------------------------------------------------------------------------------------------

def test_ffn_figure_draws_the_hidden_units_and_the_share_active_in_its_title():
    _, trace = model_trace(d_ff=512)
    fig = ffn_figure(trace, "encoder", 1)
    hidden = trace["encoder.layers.1.ffn.hidden"][0].numpy()
    (heatmap,) = fig.data
    assert np.asarray(heatmap.z).shape == (4, 512)  # tokens × units
    np.testing.assert_array_equal(np.asarray(heatmap.z, np.float32), hidden)
    assert heatmap.text is None and heatmap.zmin == 0.0
    share = f"{(hidden > 0).mean():.0%}"
    assert fig.layout.title.text == (f"Feed-forward of encoder layer 2: {share} of the hidden units are active "
                                     "(ReLU > 0)")
    assert list(fig.layout.yaxis.ticktext) == ["&lt;s&gt;", "a&amp;b", "c", "&lt;eos&gt;"]
    assert len(fig.to_json()) < 120_000  # no per-cell hover strings
    zh = ffn_figure(trace, "decoder", 0, lang="zh")
    assert zh.layout.title.text.startswith("解码器第 1 层的前馈网络") and "ReLU > 0" in zh.layout.title.text
    assert_chinese(zh, SRC + TGT)
    with pytest.raises(ValueError, match="decoder layer must be a whole number from 0 to 1"):
        ffn_figure(trace, "decoder", 2)


# logit_lens_figure -------------------------------------------------------------------------------------------------

def test_logit_lens_figure_writes_the_top_token_in_each_cell_coloured_by_its_probability():
    model, trace = model_trace()
    vocab = Vocab.from_tokens(["<b>", *(f"t{i}" for i in range(17))])  # 22 tokens, one of them markup
    lens = logit_lens(model, trace, vocab)
    fig = logit_lens_figure(lens)
    (heatmap,) = fig.data
    np.testing.assert_allclose(np.asarray(heatmap.z, float), lens.probabilities)
    assert (heatmap.zmin, heatmap.zmax) == (0.0, 1.0)
    text = np.asarray(heatmap.text)
    assert text.shape == (3, 3)  # embeddings + 2 layers, 3 decoder positions
    expected = [[vocab.tokens[i].replace("<", "&lt;").replace(">", "&gt;") for i in row] for row in lens.token_ids]
    assert text.tolist() == expected
    assert list(fig.layout.yaxis.ticktext) == ["embeddings", "after layer 1", "after layer 2"]
    assert list(fig.layout.xaxis.ticktext) == ["&lt;bos&gt;", "x", "&lt;y&gt;"]
    assert fig.layout.title.text.startswith("Logit lens (an approximation)")
    zh = logit_lens_figure(lens, lang="zh")
    assert zh.layout.title.text.startswith("逐层预测（一种近似）")
    assert_chinese(zh, [*SRC, *TGT, *vocab.tokens])
    ids = logit_lens_figure(logit_lens(model, trace))  # no vocabulary: the ids
    assert np.asarray(ids.data[0].text)[0, 0] == f"id {lens.token_ids[0, 0]}"
    with pytest.raises(ValueError, match="logit_lens"):
        logit_lens_figure(trace)


def test_logit_lens_figure_escapes_the_tokens_it_writes():
    lens = LogitLens(np.array([[4, 2]]), np.array([[0.5, 1.0]]), (("<b>", "<eos>"),), ("<bos>", "a&b"))
    fig = logit_lens_figure(lens)
    assert np.asarray(fig.data[0].text).tolist() == [["&lt;b&gt;", "&lt;eos&gt;"]]
    assert "reads “a&amp;b”<br>predicts “&lt;eos&gt;” with probability 100.0%" in fig.data[0].customdata[0][1]


# rollout_figure ----------------------------------------------------------------------------------------------------

def test_rollout_figure_draws_the_rollout_titled_as_an_approximation():
    trace = real_trace()
    fig = rollout_figure(trace, "decoder_self")
    (heatmap,) = fig.data
    np.testing.assert_allclose(np.asarray(heatmap.z, float), attention_rollout(trace, "decoder_self"), atol=1e-6)
    assert (heatmap.zmin, heatmap.zmax) == (0.0, 1.0) and heatmap.text is not None
    assert fig.layout.title.text == "Attention rollout (an approximation) · Decoder masked self-attention · layers 1–2"
    assert "(an approximation) · Encoder self-attention · layer 1" in rollout_figure(
        trace, "encoder_self", 0).layout.title.text
    assert fig.layout.xaxis.ticktext[:2] == ("&lt;bos&gt;", "le")
    assert fig.data[0].customdata[1][0].startswith("<b>query 1 “le” → key 0 “&lt;bos&gt;”</b><br>rollout ")
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # first query at the top
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("input token (target)",
                                                                          "token after layer 2 (target)")
    zh = rollout_figure(trace, "encoder_self", lang="zh")
    assert zh.layout.title.text == "注意力累积（一种近似）· 编码器自注意力 · 第 1–2 层"
    assert_chinese(zh, trace.src_tokens)
    with pytest.raises(ValueError, match="cross-attention"):
        rollout_figure(trace, "cross")


# head_score_table --------------------------------------------------------------------------------------------------

def test_head_score_table_has_a_row_per_head_and_an_alignment_column_only_with_gold_pairs():
    trace = real_trace(layers=2, heads=4)
    table = head_score_table(trace, "cross")
    assert list(table.columns) == ["layer", "head", "same position", "previous position", "first position (sink)",
                                   "entropy (bits)"]
    assert table["layer"].tolist() == [1] * 4 + [2] * 4 and table["head"].tolist() == [1, 2, 3, 4] * 2
    scores = head_scores(trace, "cross")
    np.testing.assert_allclose(table["entropy (bits)"], scores["entropy"].ravel(), atol=5e-4)
    pairs = [(0, 0), (1, 1), (2, 2)]
    aligned = head_score_table(trace, "cross", pairs)
    np.testing.assert_allclose(aligned["alignment with the gold pairs"], alignment_scores(trace, pairs).ravel(),
                               atol=5e-4)
    zh = head_score_table(trace, "encoder_self", lang="zh")
    assert list(zh.columns) == ["层", "头", "同一位置", "前一个位置", "第一个位置（汇聚点）", "熵（比特）"]
    with pytest.raises(ValueError, match="cross-attention only"):
        head_score_table(trace, "decoder_self", pairs)


def test_head_score_table_of_a_one_query_trace_leaves_the_missing_score_empty():
    table = head_score_table(layered_trace("encoder_self", [[[[1.0]]]]), "encoder_self")
    assert np.isnan(table["previous position"][0]) and table["same position"][0] == 1.0
