"""Parameter counts, block shapes, the diagram's rows and the architecture diagram, read as data."""

import re

import pytest
from helpers import drawn_alpha, make_model

from transformer_viz.figures.overview import PAGES, architecture_diagram, diagram_selection
from transformer_viz.figures.overview_blocks import column_rows, layer_rows
from transformer_viz.model.summary import block_shapes, parameter_counts


def diagram(**overrides):
    model = make_model(**overrides)
    return architecture_diagram(model.config, parameter_counts(model), block_shapes(model.config, 7, 5))


def bottom(fig, name: str) -> float:
    """The lower edge of the named shape (a rounded-rectangle path or a circle)."""
    shape = next(s for s in fig.layout.shapes if s.name == name)
    if shape.type == "circle":
        return shape.y0
    return float(re.match(r"M[-\d.]+,([-\d.]+)", shape.path).group(1))


def names(fig) -> set[str]:
    return {shape.name for shape in fig.layout.shapes if shape.name}


def texts(fig) -> str:
    return " ".join(annotation.text for annotation in fig.layout.annotations)


@pytest.mark.parametrize("overrides", [{}, dict(norm_first=False, positional="learned", embed_norm=True)])
def test_parameter_counts_add_up(overrides):
    model = make_model(**overrides)
    counts = parameter_counts(model)
    assert counts["total"] == sum(p.numel() for p in model.parameters())
    top = ["src_embed", "tgt_embed", "encoder", "decoder", "output_proj"]
    assert sum(counts[key] for key in top) == counts["total"]
    for stack, n_layers, subs in (("encoder", 2, ["self_attn", "ffn", "norm1", "norm2"]),
                                  ("decoder", 2, ["self_attn", "cross_attn", "ffn", "norm1", "norm2", "norm3"])):
        layers = [counts[f"{stack}.layers.{i}"] for i in range(n_layers)]
        for i in range(n_layers):
            assert sum(counts[f"{stack}.layers.{i}.{sub}"] for sub in subs) == layers[i]
        assert sum(layers) + counts.get(f"{stack}.norm", 0) == counts[stack]
    d_model = model.config.d_model
    assert counts["encoder.layers.0.self_attn"] == 4 * (d_model * d_model + d_model)
    assert counts["encoder.layers.0.norm1"] == 2 * d_model
    assert ("encoder.norm" in counts) == model.config.norm_first


def test_parameter_counts_of_embedding_parts():
    model = make_model(positional="learned", embed_norm=True)
    counts = parameter_counts(model)
    d_model = model.config.d_model
    assert counts["src_embed.token_table"] == 20 * d_model
    assert counts["src_embed.positional"] == model.config.max_len * d_model
    assert counts["src_embed.norm"] == 2 * d_model
    assert "src_embed.positional" not in parameter_counts(make_model())  # sinusoidal: a buffer, no parameters


def test_block_shapes():
    config = make_model(n_heads=2).config
    shapes = block_shapes(config, src_len=7, tgt_len=5)
    assert shapes["src_tokens"] == "(1, 7)"
    assert shapes["src_embed"] == shapes["memory"] == "(1, 7, 16)"
    assert shapes["encoder.self_attn"] == "(1, 2, 7, 7)"
    assert shapes["decoder.self_attn"] == "(1, 2, 5, 5)"
    assert shapes["decoder.cross_attn"] == "(1, 2, 5, 7)"
    assert shapes["decoder.ffn"] == "(1, 5, 32)"
    assert shapes["logits"] == "(1, 5, 22)"
    assert block_shapes(config, 3, 4, batch=8)["tgt_embed"] == "(8, 4, 16)"


@pytest.mark.parametrize("norm_first, keys, residuals", [
    (True, ["norm1", "self_attn", "add1", "norm2", "cross_attn", "add2", "norm3", "ffn", "add3"],
     [(0, 2), (3, 5), (6, 8)]),
    (False, ["self_attn", "norm1", "cross_attn", "norm2", "ffn", "norm3"], [(0, 1), (2, 3), (4, 5)]),
])
def test_layer_rows_place_each_norm_and_residual(norm_first, keys, residuals):
    model = make_model(norm_first=norm_first)
    rows, pairs = layer_rows(model.config, parameter_counts(model), block_shapes(model.config, 7, 5), "decoder")
    assert [row.key for row in rows] == [f"decoder.{key}" for key in keys]
    assert pairs == residuals  # (branch start, add) row indices
    assert [row.heads for row in rows if row.style == "attn"] == [4, 4]


def test_column_rows_follow_the_embedding_variant():
    model = make_model(embed_norm=True, scale_embeddings=True)
    rows = column_rows(model.config, parameter_counts(model), block_shapes(model.config, 7, 5), "tgt")
    assert [row.key for row in rows] == ["tgt.tokens", "tgt.embed", "tgt.add_position", "tgt.embed_norm"]
    assert {row.page for row in rows} == {"embeddings"}
    assert "√16" in rows[1].label and rows[1].detail.endswith(" params")


def test_pre_ln_draws_norm_before_each_sublayer_and_a_final_norm():
    fig = diagram(norm_first=True)
    for stack, sub, norm in (("encoder", "self_attn", "norm1"), ("encoder", "ffn", "norm2"),
                             ("decoder", "cross_attn", "norm2"), ("decoder", "ffn", "norm3")):
        assert bottom(fig, f"{stack}.{norm}") < bottom(fig, f"{stack}.{sub}")
    assert {"encoder.final_norm", "decoder.final_norm", "encoder.add1"} <= names(fig)
    assert "pre-LN" in texts(fig)


def test_post_ln_draws_add_and_norm_after_each_sublayer():
    fig = diagram(norm_first=False)
    for stack, sub, norm in (("encoder", "self_attn", "norm1"), ("encoder", "ffn", "norm2"),
                             ("decoder", "cross_attn", "norm2"), ("decoder", "ffn", "norm3")):
        assert bottom(fig, f"{stack}.{norm}") > bottom(fig, f"{stack}.{sub}")
    assert not {"encoder.final_norm", "decoder.final_norm", "encoder.add1"} & names(fig)
    assert "Add & Norm" in texts(fig)
    assert "post-LN" in texts(fig)


def test_diagram_sublayer_order_in_the_decoder():
    fig = diagram()
    assert bottom(fig, "decoder.self_attn") < bottom(fig, "decoder.cross_attn") < bottom(fig, "decoder.ffn")


def test_diagram_follows_the_number_of_layers_heads_and_variants():
    small, big = diagram(n_encoder_layers=1, n_decoder_layers=2), diagram(n_encoder_layers=3, n_decoder_layers=4)
    assert "1×" in texts(small) and "3×" in texts(big) and "4×" in texts(big) and "3×" not in texts(small)
    assert sum(name.startswith("encoder.self_attn.head") for name in names(diagram(n_heads=2))) == 2
    variants = diagram(scale_embeddings=True, embed_norm=True, positional="sinusoidal_concat")
    assert "√16" in texts(variants) and "sin | cos" in texts(variants)
    assert {"src.embed_norm", "tgt.embed_norm"} <= names(variants)
    assert "src.embed_norm" not in names(diagram())


def test_diagram_shows_live_shapes_and_counts():
    model = make_model()
    counts = parameter_counts(model)
    fig = architecture_diagram(model.config, counts, block_shapes(model.config, 7, 5))
    text = texts(fig)
    assert "(1, 4, 5, 7)" in text  # cross-attention weights
    assert f"{counts['encoder.layers.0.ffn']:,} params" in text
    assert f"{counts['total']:,} parameters" in text


def test_diagram_is_a_fixed_picture_with_click_targets():
    fig = diagram()
    assert fig.layout.xaxis.visible is False and fig.layout.yaxis.visible is False
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.height <= 720
    clickable = [trace for trace in fig.data if trace.customdata is not None]
    pages = {page for trace in clickable for page in trace.customdata}
    assert pages == set(PAGES)
    assert all(drawn_alpha(trace) < 0.02 and trace.hoverinfo != "skip" for trace in fig.data)  # invisible targets


@pytest.mark.parametrize("event, expected", [
    ({"selection": {"points": [{"customdata": "attention"}]}}, "attention"),
    ({"selection": {"points": [{"customdata": ["masks"]}]}}, "masks"),
    ({"selection": {"points": [{"x": 1.0}, {"customdata": "head"}]}}, "head"),
    ({"selection": {"points": []}}, None),
    ({"selection": {}}, None),
    ({}, None),
    (None, None),
    ({"selection": {"points": [{"customdata": "not a page"}]}}, None),
])
def test_diagram_selection(event, expected):
    assert diagram_selection(event) == expected
