"""transformer_viz.analysis.measures against numbers worked out by hand and against the model's own tensors."""

import math

import numpy as np
import pytest
import torch
from helpers import layered_trace, make_model, random_ids, real_trace

from transformer_viz import Vocab, load_pretrained
from transformer_viz.analysis.measures import (
    alignment_scores,
    attention_rollout,
    head_scores,
    logit_lens,
    residual_norms,
)
from transformer_viz.trace.names import name

# attention_rollout -------------------------------------------------------------------------------------------------

# Two layers, one head, three tokens. Row 1 of layer 1 has no allowed key (all zeros).
A1 = [[0.6, 0.4, 0.0], [0.0, 0.0, 0.0], [0.2, 0.2, 0.6]]
A2 = [[0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
MASK1 = [[True, True, True], [False, False, False], [True, True, True]]


def test_rollout_of_two_layers_worked_out_by_hand():
    # Â1 = 0.5·A1 + 0.5·I = [[.8 .2 0] [0 .5 0] [.1 .1 .8]]; row 1 sums to 0.5 -> renormalised [0 1 0].
    # Â2 = [[.5 .5 0] [.25 .75 0] [0 0 1]].
    # Rollout = Â2 · Â1: row 0 = .5·[.8 .2 0] + .5·[0 1 0] = [.4 .6 0];
    #                    row 1 = .25·[.8 .2 0] + .75·[0 1 0] = [.2 .8 0]; row 2 = [.1 .1 .8].
    # (The other order, Â1 · Â2, would give row 0 = [.45 .55 0].)
    trace = layered_trace("encoder_self", [[A1], [A2]], [MASK1, np.ones((3, 3), bool)])
    np.testing.assert_allclose(attention_rollout(trace, "encoder_self"),
                               [[0.4, 0.6, 0.0], [0.2, 0.8, 0.0], [0.1, 0.1, 0.8]], atol=1e-7)
    np.testing.assert_allclose(attention_rollout(trace, "encoder_self", layer=0),
                               [[0.8, 0.2, 0.0], [0.0, 1.0, 0.0], [0.1, 0.1, 0.8]], atol=1e-7)


def test_rollout_averages_the_heads():
    # Head 0 = I, head 1 puts everything on key 0: mean = 0.5·I + 0.5·[1 0 0 in every row];
    # Â = 0.5·mean + 0.5·I = 0.75·I + 0.25·[1 0 0]: rows [1 0 0], [.25 .75 0], [.25 0 .75].
    key0 = np.zeros((3, 3))
    key0[:, 0] = 1
    trace = layered_trace("decoder_self", [[np.eye(3), key0]])
    np.testing.assert_allclose(attention_rollout(trace, "decoder_self"),
                               [[1, 0, 0], [0.25, 0.75, 0], [0.25, 0, 0.75]], atol=1e-7)


def test_rollout_rows_sum_to_one_identity_stays_identity_and_the_decoder_stays_lower_triangular():
    trace = real_trace(layers=3)
    for kind in ("encoder_self", "decoder_self"):
        for layer in range(3):
            rollout = attention_rollout(trace, kind, layer)
            np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-6)
            assert (rollout >= 0).all()
    decoder = attention_rollout(trace, "decoder_self")
    assert decoder.shape == (6, 6) and np.all(np.triu(decoder, 1) == 0)
    identity = layered_trace("encoder_self", [np.eye(4)[None].repeat(2, 0)] * 3)
    np.testing.assert_array_equal(attention_rollout(identity, "encoder_self"), np.eye(4))


def test_rollout_refuses_cross_attention_and_layers_that_do_not_exist():
    trace = real_trace()
    with pytest.raises(ValueError, match=r"cross-attention .* cannot be chained"):
        attention_rollout(trace, "cross")
    with pytest.raises(ValueError, match="from 0 to 1"):
        attention_rollout(trace, "encoder_self", layer=2)
    with pytest.raises(ValueError, match="Unknown attention kind"):
        attention_rollout(trace, "self")


# head_scores -------------------------------------------------------------------------------------------------------

def test_head_scores_of_a_previous_token_head_and_a_uniform_head_worked_out_by_hand():
    causal = np.tril(np.ones((3, 3), bool))
    previous = [[1, 0, 0], [1, 0, 0], [0, 1, 0]]  # row 0 can only look at itself
    uniform = [[1, 0, 0], [1 / 2, 1 / 2, 0], [1 / 3, 1 / 3, 1 / 3]]
    scores = head_scores(layered_trace("decoder_self", [[previous, uniform]], [causal]), "decoder_self")
    assert set(scores) == {"diagonal", "previous", "first", "entropy"}
    assert all(v.shape == (1, 2) for v in scores.values())
    # diagonal: head 0 (1 + 0 + 0) / 3; head 1 (1 + 1/2 + 1/3) / 3 = 11/18
    np.testing.assert_allclose(scores["diagonal"][0], [1 / 3, 11 / 18])
    # previous (queries 1 and 2): head 0 (1 + 1) / 2; head 1 (1/2 + 1/3) / 2 = 5/12
    np.testing.assert_allclose(scores["previous"][0], [1.0, 5 / 12])
    # first: head 0 (1 + 1 + 0) / 3; head 1 (1 + 1/2 + 1/3) / 3
    np.testing.assert_allclose(scores["first"][0], [2 / 3, 11 / 18])
    # entropy: head 0 one-hot rows, 0 bits; head 1 (0 + 1 + log2 3) / 3
    np.testing.assert_allclose(scores["entropy"][0], [0.0, (1 + math.log2(3)) / 3])


def test_cross_attention_head_scores_use_the_same_index_where_the_source_has_one_and_skip_blocked_rows():
    # 3 target rows, 2 source keys; row 2 has no allowed key (all zeros) and is left out.
    weights = [[0.7, 0.3], [0.4, 0.6], [0.0, 0.0]]
    mask = [[True, True], [True, True], [False, False]]
    scores = head_scores(layered_trace("cross", [[weights]], [mask]), "cross")
    assert scores["diagonal"][0, 0] == pytest.approx((0.7 + 0.6) / 2)  # rows 0 and 1 have a same-index key
    assert scores["previous"][0, 0] == pytest.approx(0.4)  # row 1 only (row 2 is blocked)
    assert scores["first"][0, 0] == pytest.approx((0.7 + 0.4) / 2)
    one_query = head_scores(layered_trace("encoder_self", [[[[1.0]]]]), "encoder_self")
    assert np.isnan(one_query["previous"][0, 0])  # no query has a previous position


# alignment_scores --------------------------------------------------------------------------------------------------

def test_alignment_reads_row_j_for_target_token_j_as_evaluate_does():
    # Reverse "a b c": target "c b a", gold (source i, target j) = (2, 0), (1, 1), (0, 2). Decoder input
    # <bos> c b a: row j reads <bos> + j target tokens and writes target token j; row 3 writes <eos>.
    right = np.zeros((4, 4))  # row j -> source 2 - j; row 3 -> <eos> (source 3)
    right[[0, 1, 2, 3], [2, 1, 0, 3]] = 1
    shifted = np.zeros((4, 4))  # right for a reader that took row j + 1 for target j
    shifted[[0, 1, 2, 3], [3, 2, 1, 0]] = 1
    trace = layered_trace("cross", [[right, shifted]])
    pairs = [(2, 0), (1, 1), (0, 2)]
    np.testing.assert_array_equal(alignment_scores(trace, pairs), [[1.0, 0.0]])
    # Several gold sources for one target: any of them counts. Ties go to the first key, as torch.argmax.
    tie = np.zeros((4, 4))
    tie[:, :2] = 0.5  # every row: keys 0 and 1 tie
    trace = layered_trace("cross", [[tie]])
    assert alignment_scores(trace, [(0, 0), (1, 1)])[0, 0] == pytest.approx(0.5)  # row 0 -> 0 ✓, row 1 -> 0 ✗
    assert alignment_scores(trace, [(1, 0), (0, 0)])[0, 0] == 1.0
    assert np.isnan(alignment_scores(trace, [(0, 9)])).all()  # no row writes target 9
    with pytest.raises(ValueError, match="gold pair"):
        alignment_scores(trace, [(0, -1)])


def test_alignment_of_the_shipped_reverse_model_matches_its_measured_metrics():
    pretrained = load_pretrained("reverse")
    _, trace = pretrained.translate("hello")
    pairs = pretrained.task.alignment(trace.src_tokens, trace.tgt_tokens)
    scores = alignment_scores(trace, pairs)
    assert scores.shape == (2, 4)
    assert pretrained.metrics["alignment_by_layer"][1] == 1.0
    assert scores[1].mean() == 1.0  # every head of layer 2 (head-averaged in evaluate) reads the gold source
    assert scores.max() == 1.0 and scores[0].mean() < 1.0


# logit_lens --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("norm_first", [True, False])
def test_logit_lens_last_layer_is_the_models_own_prediction(norm_first):
    model = make_model(norm_first=norm_first, n_decoder_layers=3)
    logits, trace = model.run_with_trace(random_ids(1, 7, 20), random_ids(1, 5, 22))
    lens = logit_lens(model, trace)
    assert lens.token_ids.shape == lens.probabilities.shape == (4, 5)  # embeddings + 3 layers
    np.testing.assert_array_equal(lens.token_ids[-1], logits[0].argmax(-1).numpy())
    np.testing.assert_allclose(lens.probabilities[-1], logits[0].softmax(-1).max(-1).values.numpy(), atol=1e-6)
    assert ((lens.probabilities > 0) & (lens.probabilities <= 1)).all()
    assert lens.top_tokens is None and lens.input_tokens is None


def test_logit_lens_names_tokens_with_a_vocabulary_and_refuses_another_models_trace():
    model = make_model()
    _, trace = model.run_with_trace(random_ids(1, 7, 20), random_ids(1, 5, 22))
    vocab = Vocab.from_tokens(f"t{i}" for i in range(18))  # 4 specials + 18 = 22 target tokens
    lens = logit_lens(model, trace.with_tokens(None, ["<bos>", "a", "b", "c", "d"]), vocab)
    assert lens.top_tokens == tuple(tuple(vocab.decode(row)) for row in lens.token_ids)
    assert lens.input_tokens == ("<bos>", "a", "b", "c", "d")
    with pytest.raises(ValueError, match="another shape"):
        logit_lens(make_model(d_model=32), trace)


# residual_norms ----------------------------------------------------------------------------------------------------

def norms(tensor):
    return tensor[0].double().norm(dim=-1).numpy()


def test_pre_ln_input_plus_what_each_sublayer_added_is_the_layers_output():
    model = make_model()
    _, trace = model.run_with_trace(random_ids(1, 7, 20), random_ids(1, 5, 22))
    result = residual_norms(trace, "decoder")
    assert set(result) == {"input", "resid_mid", "self_attn", "resid_cross", "cross_attn", "resid_post", "ffn"}
    assert all(v.shape == (2, 5) for v in result.values())
    for layer, block in enumerate(model.decoder.layers):
        entering = trace["tgt_embed.out" if layer == 0 else name("decoder", layer - 1, "resid_post")]
        attention = trace[name("decoder", layer, "self_attn", "out")]
        cross = trace[name("decoder", layer, "cross_attn", "out")]
        with torch.inference_mode():
            ffn = block.ffn.linear2(trace[name("decoder", layer, "ffn", "hidden")])  # what the FFN returned
        torch.testing.assert_close(entering + attention + cross + ffn, trace[name("decoder", layer, "resid_post")])
        np.testing.assert_allclose(result["input"][layer], norms(entering), rtol=1e-6)
        np.testing.assert_allclose(result["self_attn"][layer], norms(attention), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(result["cross_attn"][layer], norms(cross), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(result["ffn"][layer], norms(ffn), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(result["resid_post"][layer],
                                   norms(trace[name("decoder", layer, "resid_post")]), rtol=1e-6)
    encoder = residual_norms(trace, "encoder")
    assert set(encoder) == {"input", "resid_mid", "self_attn", "resid_post", "ffn"}
    np.testing.assert_allclose(encoder["input"][1], encoder["resid_post"][0])


def test_post_ln_measures_how_far_the_stream_moved_not_the_sublayers_output():
    model = make_model(norm_first=False)
    _, trace = model.run_with_trace(random_ids(1, 7, 20), random_ids(1, 5, 22))
    result = residual_norms(trace, "encoder")
    entering, mid = trace["src_embed.out"], trace[name("encoder", 0, "resid_mid")]
    attention = trace[name("encoder", 0, "self_attn", "out")]
    with torch.inference_mode():
        # post-LN: LayerNorm(x + sublayer(x))
        torch.testing.assert_close(model.encoder.layers[0].norm1(entering + attention), mid)
    np.testing.assert_allclose(result["self_attn"][0], norms(mid - entering), rtol=1e-5)
    assert not np.allclose(result["self_attn"][0], norms(attention), rtol=1e-2)


def test_residual_norms_refuse_an_unknown_stack_and_a_trace_without_streams():
    with pytest.raises(ValueError, match="stack must be one of encoder, decoder"):
        residual_norms(real_trace(), "middle")
    with pytest.raises(ValueError, match=r"did not record src_embed\.out"):
        residual_norms(layered_trace("encoder_self", [np.eye(2)[None]]), "encoder")  # weights, no streams
