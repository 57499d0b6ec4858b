"""Figures for a projector, as data: `min_font` raises every text of a figure (presenter mode asks for 16 px), the
geometry makes room for it, and what thinning or wrapping keeps."""

import re

import numpy as np
import pytest
import torch
from helpers import make_model, random_ids, real_trace

from transformer_viz import learn_bpe
from transformer_viz.analysis.measures import logit_lens
from transformer_viz.analysis.walkthrough import head_walkthrough
from transformer_viz.figures.attention import attention_heatmap, attention_lines, head_entropy
from transformer_viz.figures.compare import difference_grid
from transformer_viz.figures.decoding import attention_by_step, sampling_bars, topk_bars
from transformer_viz.figures.embeddings import embedding_pipeline, positional_variants, trace_curves, trace_similarity
from transformer_viz.figures.fit import PROJECTOR_FONT_PX, Ticks, at_least, text_em, tick_labels, tick_plan, wrapped
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.head import dot_product_figure, walkthrough_figures
from transformer_viz.figures.layers import ffn_figure, logit_lens_figure, residual_figure
from transformer_viz.figures.masks import mask_figures, masking_steps
from transformer_viz.figures.overview import MAX_HEIGHT, ROOMY_UNIT_PX, architecture_diagram
from transformer_viz.figures.rollout import rollout_figure
from transformer_viz.figures.tokens import bpe_figure
from transformer_viz.figures.training import attention_animation, loss_curve
from transformer_viz.lessons.scaling import entropy_chart
from transformer_viz.lessons.tokens import bpe_chart
from transformer_viz.lessons.training import start_figure
from transformer_viz.model import encoding_tables
from transformer_viz.model.summary import block_shapes, parameter_counts

SRC = ["the", "cat", "sat", "on", "the", "mat", "<eos>", "<pad>", "<pad>"]
TGT = ["<bos>", "le", "chat", "sur", "le", "<eos>", "<pad>"]


def font_sizes(fig) -> list[float]:
    """Every font size a figure sets: its own font, titles, ticks, cell texts, annotations, legends, colour bars,
    and the sizes of spans inside its texts (the hover's left out: it is not on the page until the mouse asks)."""
    sizes = []

    def walk(node, key=""):
        if isinstance(node, str):
            sizes.extend(float(size) for size in re.findall(r"font-size:\s*(\d+(?:\.\d+)?)px", node))
        elif isinstance(node, dict):
            if key.endswith("font") and key != "hoverlabelfont" and "size" in node:
                size = node["size"]
                sizes.extend(np.ravel(size).tolist() if not isinstance(size, int | float) else [size])
            for name, value in node.items():
                walk(value, key + name if name == "font" else name)
        elif isinstance(node, list | tuple):
            for item in node:
                walk(item, key)

    layout, data = fig.to_plotly_json()["layout"], fig.to_plotly_json()["data"]
    layout.pop("hoverlabel", None)
    for trace in data:
        for hover in ("hovertemplate", "hovertext", "customdata"):
            trace.pop(hover, None)
    walk({"layout": layout, "data": data})
    return sizes


def builders(trace, min_font, lang="en"):
    """Every figure of the Attention, Compare and Masks pages, built with `min_font`."""
    yield attention_grid(trace, "cross", width=790, min_font=min_font, lang=lang)
    yield difference_grid(trace, trace, "cross", width=790, min_font=min_font, lang=lang)
    yield attention_heatmap(trace, "decoder_self", 1, 0, width=455, max_width=1100, min_font=min_font, lang=lang)
    yield attention_lines(trace, "cross", 0, 1, query=2, min_font=min_font, lang=lang)
    yield head_entropy(trace, "encoder_self", min_font=min_font, lang=lang)
    yield rollout_figure(trace, "encoder_self", min_font=min_font, lang=lang)
    yield from mask_figures(trace, min_font=min_font, lang=lang).values()
    yield masking_steps(trace, "decoder_self", 1, 0, width=790, max_width=1880, min_font=min_font, lang=lang)


def other_builders(min_font, lang="en"):
    """The figures of Inside one head, Embeddings, Inside the layers, Training and the lesson's tokens step."""
    model = make_model(d_model=8, n_heads=2)
    _, trace = model.run_with_trace(random_ids(1, 5, 20, pad_tail=[1]), random_ids(1, 4, 22))
    walk = head_walkthrough(model, trace, "encoder_self", 0, 1)
    yield from (fig for _, fig in walkthrough_figures(walk, (0, 1), min_font=min_font, lang=lang))
    yield dot_product_figure(walk, 0, 1, min_font=min_font, lang=lang)
    yield embedding_pipeline(trace, "src", min_font=min_font, lang=lang)
    yield trace_curves(trace, "src", (0, 1), min_font=min_font, lang=lang)
    yield trace_similarity(trace, "src", min_font=min_font, lang=lang)
    yield residual_figure(trace, "encoder", min_font=min_font, lang=lang)
    yield ffn_figure(trace, "decoder", 1, min_font=min_font, lang=lang)
    corpus = learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 4)
    yield bpe_figure(corpus, 2, lang, width=790, min_font=min_font)
    yield loss_curve([(1, 2.0, 0.1), (2, 1.0, 0.5)], min_font=min_font, lang=lang)
    yield attention_animation([(1, np.eye(3)), (2, np.eye(3))], list("abc"), list("xyz"), "A head",
                              min_font=min_font, lang=lang)


def more_builders(min_font, lang="en"):
    """The figures of Decoding, Overview, the Embeddings variants, the logit lens and the lesson's own charts."""
    model = make_model()
    _, steps = model.generate(torch.tensor([[3, 4, 5, 2]]), max_new_tokens=3, bos_id=1, eos_id=2)
    tokens = [f"t{i}" for i in range(22)]
    probabilities = steps[-1]["logits"][0, -1].softmax(-1)
    yield topk_bars(probabilities, tokens, k=5, min_font=min_font, lang=lang)
    yield sampling_bars(probabilities, probabilities ** 2 / (probabilities ** 2).sum(), tokens, chosen=3,
                        min_font=min_font, lang=lang)
    yield attention_by_step(steps, 1, 0, min_font=min_font, lang=lang)
    yield architecture_diagram(model.config, parameter_counts(model), block_shapes(model.config, 7, 5),
                               min_font=min_font, lang=lang)
    yield positional_variants(encoding_tables(24, 16), min_font=min_font, lang=lang)
    _, trace = model.run_with_trace(torch.tensor([[3, 4, 5, 2]]), torch.tensor([[1, 6, 7]]))
    yield logit_lens_figure(logit_lens(model, trace), min_font=min_font, lang=lang)
    yield start_figure(trace, title="start", min_font=min_font, lang=lang)
    yield entropy_chart(min_font=min_font, lang=lang)
    yield bpe_chart("low low lower newest widest", 2, width=790, marked=False, min_font=min_font, lang=lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_min_font_raises_every_text_of_every_figure(lang):
    trace = real_trace(src=SRC, tgt=TGT)
    for fig in (*builders(trace, PROJECTOR_FONT_PX, lang), *other_builders(PROJECTOR_FONT_PX, lang),
                *more_builders(PROJECTOR_FONT_PX, lang)):
        sizes = font_sizes(fig)
        assert sizes and min(sizes) >= PROJECTOR_FONT_PX, (fig.layout.title.text, sorted(set(sizes)))
        assert fig.layout.font.size >= PROJECTOR_FONT_PX  # axis titles, colour bars and legends without their own


def test_the_default_figures_keep_their_screen_sizes():
    trace = real_trace(src=SRC, tgt=TGT)
    assert min(min(font_sizes(fig)) for fig in builders(trace, 10)) < PROJECTOR_FONT_PX
    assert min(min(font_sizes(fig), default=14) for fig in other_builders(10)) < PROJECTOR_FONT_PX
    assert all(min(font_sizes(fig)) < PROJECTOR_FONT_PX for fig in more_builders(10))
    assert attention_grid(trace, "cross").layout.xaxis.tickfont.size == 12


def test_larger_text_takes_more_room_not_less_legible_cells():
    trace = real_trace(src=SRC, tgt=TGT)  # 9 keys in 455 px: cells of about 35 px
    screen, projector = (attention_heatmap(trace, "cross", 0, 0, width=455, min_font=font) for font in (10, 16))
    assert projector.layout.xaxis.tickfont.size >= 16 and screen.layout.xaxis.tickfont.size < 16
    # Numbers that no longer fit their cells at 16 px are left out rather than set smaller.
    assert screen.data[0].texttemplate and not projector.data[0].texttemplate
    grid = attention_grid(trace, "cross", width=790, min_font=16)
    assert grid.layout.margin.l > attention_grid(trace, "cross", width=790).layout.margin.l  # wider labels


def test_the_difference_grid_is_laid_out_as_the_grids_it_compares():
    trace = real_trace(src=SRC, tgt=TGT)
    for font in (10, 16):
        a, difference = attention_grid(trace, "cross", width=790, min_font=font), difference_grid(
            trace, trace, "cross", width=790, min_font=font)
        assert a.layout.margin == difference.layout.margin and a.layout.height == difference.layout.height
        assert list(a.layout.xaxis.ticktext) == list(difference.layout.xaxis.ticktext)  # the keys named under both
        assert a.data[0].colorbar.x == difference.data[0].colorbar.x == 1.0  # a fixed gap, whatever the width


def test_a_thinned_mask_axis_keeps_the_eos_where_the_padding_starts():
    # 9 letters, <eos> and two <pad>: 12 columns of 10 px in a 180 px mask, labelled every second one.
    src = [*"abcdefghi", "<eos>", "<pad>", "<pad>"]
    source = mask_figures(real_trace(src=src, tgt=["<bos>", "x"]))["source_padding"]
    shown = list(source.layout.xaxis.ticktext)
    assert len(shown) < len(src) and "&lt;eos&gt;" in shown
    assert "&lt;eos&gt;" in list(source.layout.yaxis.ticktext) or len(source.layout.yaxis.ticktext) == len(src)


def test_tick_labels_keep_the_labels_asked_for_and_thin_the_rest():
    plan = Ticks(step=2, angle=-90, font=12, depth=30)
    labels = tick_labels(range(8), list("abcdefgh"), plan, keep=(5,))
    assert labels["ticktext"] == ["a", "c", "f", "h"]  # f kept; its neighbours e and g too close to it
    assert tick_labels(range(8), list("abcdefgh"), plan)["ticktext"] == ["a", "c", "e", "g"]


def test_min_font_is_the_floor_of_every_size_a_plan_chooses():
    assert at_least(12, 16) == 16 and at_least(20, 16) == 20
    plan = tick_plan(["<bos>", "chien"], 14, "x", min_font=16)  # 14 px apart: 16 px labels cannot all stand
    assert plan.font >= 16 and plan.step > 1
    assert tick_plan(["a", "b"], 30, "y", min_font=16).font == 16


def test_wrapped_breaks_lines_wider_than_the_room_between_words_or_cjk_characters():
    assert wrapped("no query looks at<br>a source &lt;pad&gt;", 170, 16) == "no query looks at<br>a source &lt;pad&gt;"
    english = wrapped("no query looks at a source &lt;pad&gt;", 100, 16)
    assert all(text_em(line) * 16 <= 100 for line in english.split("<br>")) and english.count("<br>") >= 2
    chinese = wrapped("前瞻掩码与<br>目标序列填充掩码同时生效", 170, 16)
    assert chinese.replace("<br>", "") == "前瞻掩码与目标序列填充掩码同时生效"
    assert all(text_em(line) * 16 <= 170 for line in chinese.split("<br>"))


def test_panel_titles_too_wide_for_their_column_at_a_projector_font_take_two_lines():
    model = make_model(d_model=8, n_heads=2)
    _, trace = model.run_with_trace(random_ids(1, 5, 20, pad_tail=[1]), random_ids(1, 4, 22))
    walk = head_walkthrough(model, trace, "encoder_self", 0, 1)
    steps = dict(walkthrough_figures(walk, min_font=PROJECTOR_FONT_PX, lang="zh"))
    mask_title = steps["mask"].layout.annotations[1].text  # "掩码（✓ = 可以关注，被屏蔽 → −1e9）"
    assert "<br>" in mask_title and "<br>" not in dict(walkthrough_figures(walk, lang="zh"))["mask"].layout.annotations[
        1].text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_diagram_on_a_projector_gives_every_block_the_lines_its_larger_text_needs(lang):
    model = make_model(d_model=64, d_ff=2048)  # "hidden (1, 7, 2048) · 264,256 params": wider than a block at 16 px
    counts, shapes = parameter_counts(model), block_shapes(model.config, 7, 5)
    screen, projector = (architecture_diagram(model.config, counts, shapes, min_font=font, lang=lang)
                         for font in (10, PROJECTOR_FONT_PX))
    assert screen.layout.height <= MAX_HEIGHT < projector.layout.height
    ffn = next(a.text for a in projector.layout.annotations if "264,256" in a.text)
    assert ffn.count("<br>") >= 2  # label, then the detail broken over lines of its own
    for fig in (screen, projector):
        frame = next(s for s in fig.layout.shapes if s.name == "decoder.frame")
        assert fig.layout.xaxis.range[0] <= 0 and frame.path
    width = projector.layout.xaxis.range[1] - projector.layout.xaxis.range[0]
    assert width * ROOMY_UNIT_PX <= 790  # the presenter's column at 150 % zoom holds it at that scale
