"""A layer, head, query or key that does not exist is a ValueError naming the valid range, in every builder.

One check serves them all (`check_index`, through `attention_arrays`): a negative head must not quietly
draw the last head, as numpy indexing would.
"""

import numpy as np
import pytest
import torch
from helpers import make_model, real_trace

from transformer_viz import Trace
from transformer_viz.analysis.walkthrough import cell_numbers, head_walkthrough
from transformer_viz.figures.attention import attention_heatmap, attention_lines, head_entropy
from transformer_viz.figures.decoding import attention_by_step, topk_bars
from transformer_viz.figures.embeddings import positional_curves
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.head import dot_product_figure, walkthrough_figures
from transformer_viz.figures.masks import masking_steps
from transformer_viz.trace.names import check_index

TRACE = real_trace(layers=2, heads=4)  # 8 source tokens, 6 target tokens
LAYERS = "layer must be a whole number from 0 to 1 \\(counting from 0\\)"
HEADS = "head must be a whole number from 0 to 3 \\(counting from 0\\)"
SRC_POSITIONS, TGT_POSITIONS = "from 0 to 7 \\(counting from 0\\)", "from 0 to 5 \\(counting from 0\\)"


@pytest.fixture(scope="module")
def decoding():
    model = make_model()
    _, steps = model.generate(torch.tensor([[3, 4, 5, 2]]), max_new_tokens=3, bos_id=1, eos_id=2)
    return model, steps


def test_check_index_returns_a_plain_int_and_names_the_range():
    assert check_index(np.int64(2), 3, "head") == 2 and type(check_index(np.int64(2), 3, "head")) is int
    for bad in (3, -1, 1.0, "1", True, None):
        with pytest.raises(ValueError, match=r"head must be a whole number from 0 to 2 \(counting from 0\), got "):
            check_index(bad, 3, "head")
    with pytest.raises(ValueError, match="There is no layer to choose from"):
        check_index(0, 0, "layer")


@pytest.mark.parametrize("call, message", [
    (lambda: attention_heatmap(TRACE, "cross", 2, 0), f"Cross-attention .* {LAYERS}, got 2"),
    (lambda: attention_heatmap(TRACE, "cross", -1, 0), f"Cross-attention .* {LAYERS}, got -1"),
    (lambda: attention_heatmap(TRACE, "cross", 0, 4), f"{HEADS}, got 4"),
    (lambda: attention_heatmap(TRACE, "cross", 0, -1), f"{HEADS}, got -1"),  # today: head 3, silently
    (lambda: attention_heatmap(TRACE, "cross", "0", 0), f"{LAYERS}, got '0'"),
    (lambda: attention_heatmap(TRACE, "cross", 0, 0, highlight=(6, 0)), f"query .* {TGT_POSITIONS}, got 6"),
    (lambda: attention_heatmap(TRACE, "cross", 0, 0, highlight=(0, -8)), f"key .* {SRC_POSITIONS}, got -8"),
    (lambda: attention_heatmap(TRACE, "cross", 0, 0, highlight=(0,)), "highlight must be a pair \\(query, key\\)"),
    (lambda: attention_lines(TRACE, "decoder_self", 0, 0, query=6), f"query .* {TGT_POSITIONS}, got 6"),
    (lambda: attention_lines(TRACE, "decoder_self", 0, 0, query=-1), f"query .* {TGT_POSITIONS}, got -1"),
    (lambda: attention_lines(TRACE, "decoder_self", 0, 9), f"{HEADS}, got 9"),
    (lambda: attention_grid(TRACE, "encoder_self", highlight=(2, 0)), f"{LAYERS}, got 2"),
    (lambda: attention_grid(TRACE, "encoder_self", highlight=(0, -1)), f"{HEADS}, got -1"),
    (lambda: attention_grid(TRACE, ["encoder_self"]), "Unknown attention kind .* choose one of encoder_self"),
    (lambda: masking_steps(TRACE, "encoder_self", 5, 0), f"{LAYERS}, got 5"),
    (lambda: masking_steps(TRACE, "encoder_self", 0, 4), f"{HEADS}, got 4"),
    (lambda: head_entropy(TRACE, {"cross"}), "Unknown attention kind .* choose one of encoder_self"),
    (lambda: cell_numbers(TRACE, "cross", 2, 0, 0, 0), f"{LAYERS}, got 2"),
    (lambda: cell_numbers(TRACE, "cross", 0, -1, 0, 0), f"{HEADS}, got -1"),
    (lambda: cell_numbers(TRACE, "cross", 0, 0, 6, 0), f"query .* {TGT_POSITIONS}, got 6"),
    (lambda: cell_numbers(TRACE, "cross", 0, 0, 0, -1), f"key .* {SRC_POSITIONS}, got -1"),
    (lambda: cell_numbers(TRACE, ["cross"], 0, 0, 0, 0), "Unknown attention kind"),
])
def test_a_choice_that_does_not_exist_is_a_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_layer_the_trace_did_not_record_is_a_value_error():
    """A trace whose config promises two layers but that holds one (built by hand, or cut short)."""
    cut = Trace({name: tensor for name, tensor in TRACE.items() if ".layers.1." not in name}, config=TRACE.config)
    with pytest.raises(ValueError, match=r"did not record decoder\.layers\.1\.cross_attn\.weights"):
        head_entropy(cut, "cross")
    with pytest.raises(ValueError, match=r"There is no Cross-attention .* layer to choose from"):
        attention_grid(Trace({}), "cross")


def test_decoding_figures_refuse_a_layer_or_head_that_does_not_exist(decoding):
    _, steps = decoding
    with pytest.raises(ValueError, match=f"{LAYERS}, got 2"):
        attention_by_step(steps, 2)
    with pytest.raises(ValueError, match=f"{HEADS}, got -1"):
        attention_by_step(steps, 0, -1)
    with pytest.raises(ValueError, match="at least one decoding step"):
        attention_by_step([], 0)
    with pytest.raises(ValueError, match="chosen must be a whole number from 0 to 21"):
        topk_bars(steps[0]["logits"][0, -1].softmax(-1), [], chosen=22)
    with pytest.raises(ValueError, match="k must be a whole number of at least 1"):
        topk_bars(steps[0]["logits"][0, -1].softmax(-1), [], k=0)


def test_the_walkthrough_refuses_a_layer_head_query_or_key_that_does_not_exist(decoding):
    model, steps = decoding
    trace = steps[-1]
    with pytest.raises(ValueError, match=f"{HEADS}, got '1'"):
        head_walkthrough(model, trace, "cross", 0, "1")
    with pytest.raises(ValueError, match=f"{LAYERS}, got 1.0"):
        head_walkthrough(model, trace, "cross", 1.0, 0)
    walk = head_walkthrough(model, trace, "cross", 0, 0)
    q_len, k_len = len(walk.query_tokens), len(walk.key_tokens)
    with pytest.raises(ValueError, match=f"query must be a whole number from 0 to {q_len - 1}"):
        dot_product_figure(walk, q_len, 0)
    with pytest.raises(ValueError, match=f"key must be a whole number from 0 to {k_len - 1}"):
        dot_product_figure(walk, 0, -1)
    with pytest.raises(ValueError, match=f"key must be a whole number from 0 to {k_len - 1}"):
        walkthrough_figures(walk, cell=(0, k_len))


def test_positional_curves_refuse_a_dimension_that_does_not_exist():
    table = TRACE["src_embed.position"]  # (src_len, d_model = 16)
    for dim in (16, -1, 2.0):
        with pytest.raises(ValueError, match=r"dimension must be a whole number from 0 to 15 \(counting from 0\), got"):
            positional_curves(table, [0, dim])
    assert positional_curves(table, [np.int64(3)]).data[0].name.startswith("dim 3")
