"""Training and decoding figures, read as data."""

import numpy as np
import torch
from helpers import make_model

from transformer_viz.figures.decoding import attention_by_step, topk_bars
from transformer_viz.figures.training import attention_animation, loss_curve


def test_loss_curve_puts_accuracy_on_a_right_axis_from_0_to_1():
    history = [(0, 3.0, 0.1), (50, 1.5, 0.6), (100, 0.4, 0.95)]
    fig = loss_curve(history)
    loss, accuracy = fig.data
    assert list(loss.x) == [0, 50, 100] and list(loss.y) == [3.0, 1.5, 0.4]
    assert list(accuracy.y) == [0.1, 0.6, 0.95]
    assert loss.yaxis == "y" and accuracy.yaxis == "y2"
    assert fig.layout.yaxis2.side == "right" and fig.layout.yaxis2.range[0] == 0 and fig.layout.yaxis2.range[1] >= 1
    assert loss.line.color != accuracy.line.color


def test_loss_curve_without_history():
    fig = loss_curve([])
    assert len(fig.data[0].x) == 0 and "Nothing trained" in fig.layout.annotations[0].text


def snapshots(n_steps=4, q_len=3, k_len=5):
    rng = np.random.default_rng(0)
    result = []
    for step in range(0, 40 * n_steps, 40):
        weights = rng.random((q_len, k_len))
        result.append((step, weights / weights.sum(axis=1, keepdims=True)))
    return result


def test_attention_animation_has_one_frame_per_snapshot_and_a_step_slider():
    snaps = snapshots()
    fig = attention_animation(snaps, ["a", "b", "a"], ["x", "y", "z", "y", "x"], "Encoder layer 1, head 2")
    assert len(fig.frames) == 4
    for frame, (step, weights) in zip(fig.frames, snaps, strict=True):
        assert frame.name == str(step)
        np.testing.assert_allclose(np.asarray(frame.data[0].z), weights)
        assert (frame.data[0].zmin, frame.data[0].zmax) == (0.0, 1.0)
        assert frame.layout.title.text.endswith(f"step {step}")
    slider = fig.layout.sliders[0]
    assert [s.label for s in slider.steps] == ["0", "40", "80", "120"]
    assert slider.currentvalue.prefix == "step "
    assert all(s.method == "animate" and list(s.args[0]) == [s.label] for s in slider.steps)
    buttons = fig.layout.updatemenus[0].buttons
    assert ["Play" in b.label for b in buttons] == [True, False] and all(b.method == "animate" for b in buttons)
    np.testing.assert_allclose(np.asarray(fig.data[0].z), snaps[0][1])
    assert list(fig.layout.yaxis.ticktext) == ["a", "b", "a"] and fig.layout.yaxis.autorange == "reversed"
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]


def test_attention_animation_without_snapshots():
    fig = attention_animation([], None, None, "Head 1")
    assert not fig.frames and "No snapshots" in fig.layout.annotations[0].text


def test_topk_bars_sorts_and_highlights_the_argmax():
    probabilities = np.array([0.05, 0.4, 0.1, 0.3, 0.15])
    fig = topk_bars(probabilities, ["a", "b", "c", "d", "e"], k=3)
    bars = fig.data[0]
    np.testing.assert_allclose(bars.x, [0.4, 0.3, 0.15])
    assert list(fig.layout.yaxis.ticktext) == ["b", "d", "e"] and fig.layout.yaxis.autorange == "reversed"
    colours = list(bars.marker.color)
    assert colours.count(colours[0]) == 1 and len(set(colours[1:])) == 1  # the chosen bar alone stands out
    assert list(fig.layout.xaxis.range) == [0, 1]


def test_topk_bars_adds_a_chosen_token_outside_the_top_k():
    probabilities = torch.tensor([0.05, 0.4, 0.1, 0.3, 0.15])
    fig = topk_bars(probabilities, ["<eos>", "b", "c", "d", "e"], k=2, chosen=0)
    assert list(fig.layout.yaxis.ticktext) == ["b", "d", "&lt;eos&gt;"]
    colours = list(fig.data[0].marker.color)
    assert colours.count(colours[2]) == 1 and colours[0] == colours[1]


def test_attention_by_step_rows_are_the_last_query_of_each_step():
    torch.manual_seed(0)
    model = make_model(n_heads=2)
    src = torch.tensor([[3, 5, 7, 3]])
    _, steps = model.generate(src, max_new_tokens=4, bos_id=1, eos_id=99)
    steps = [trace.with_tokens(["the", "cat", "saw", "the"]) for trace in steps]
    fig = attention_by_step(steps, layer=1)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (4, 4)
    for k, trace in enumerate(steps):
        weights = trace["decoder.layers.1.cross_attn.weights"][0, :, -1].numpy()  # (heads, src_len)
        np.testing.assert_allclose(z[k], weights.mean(axis=0), atol=1e-6)
    assert list(fig.layout.xaxis.ticktext) == ["the", "cat", "saw", "the"]
    ids = [int(trace["logits"][0, -1].argmax()) for trace in steps]
    assert list(fig.layout.yaxis.ticktext) == [f"{k + 1} → id {i}" for k, i in enumerate(ids)]
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0) and "layer 2" in fig.layout.title.text

    one_head = attention_by_step(steps, layer=0, head=1, produced=["a", "b", "c", "d"])
    np.testing.assert_allclose(np.asarray(one_head.data[0].z)[2],
                               steps[2]["decoder.layers.0.cross_attn.weights"][0, 1, -1].numpy(), atol=1e-6)
    assert list(one_head.layout.yaxis.ticktext) == ["1 → a", "2 → b", "3 → c", "4 → d"]
    assert "head 2" in one_head.layout.title.text
