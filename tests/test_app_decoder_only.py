"""Every page on a decoder-only (GPT-style) model in Streamlit's AppTest: what it shows, and what it says it has not."""

import base64
import json
import math

import numpy as np
import pytest
from test_app import PAGES, assert_valid_figures, chart_specs, run_page

DECODER_ONLY = {"architecture": "decoder_only"}


def typed_array(z) -> np.ndarray:
    """A heatmap's z from its JSON: a list of rows, or Plotly's typed array {"bdata", "dtype", "shape"}."""
    if not isinstance(z, dict):
        return np.array(z, dtype=float)
    shape = tuple(int(n) for n in z["shape"].split(","))
    return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_draws_the_shipped_decoder_only_model(page):
    at = run_page(page, **DECODER_ONLY)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    if page != "training":
        assert at.get("plotly_chart"), "the page drew no figure"
    assert_valid_figures(at)
    if page not in ("lesson", "training", "compare", "break_it"):
        assert any("Decoder-only (GPT-style)" in caption.value and "100.0%" in caption.value
                   for caption in at.caption), "the banner names the shipped decoder-only model and its exact match"


@pytest.mark.parametrize("page", ["attention", "head", "masks"])
def test_the_only_attention_offered_is_the_masked_self_attention(page):
    at = run_page(page, **DECODER_ONLY)
    kind = next(box for box in at.selectbox if box.key in ("kind", "mask_kind"))
    assert len(kind.options) == 1 and kind.value == "decoder_self"


def test_the_prompt_and_the_answer_are_one_stream_on_screen():
    at = run_page("attention", src_text="stressed", **DECODER_ONLY)
    chips = " ".join(element.proto.body for element in at.get("html"))
    assert "Prompt" in chips and ">=<" in chips.replace(" ", "")  # the separator closes the prompt
    assert "Source tokens" not in chips


def test_a_teacher_forced_page_names_the_rest_of_the_stream_the_answer():
    at = run_page("masks", src_text="stressed", **DECODER_ONLY)  # the Masks page feeds the model's own answer
    chips = " ".join(element.proto.body for element in at.get("html"))
    assert "Answer, read after the prompt" in chips and "Decoder input tokens" not in chips


def test_decoding_looks_back_over_the_prompt_and_has_no_cross_attention():
    at = run_page("decoding", src_text="stressed", **DECODER_ONLY)
    by_step = next(spec for spec in chart_specs(at) if "Masked self-attention" in json.dumps(spec["layout"]["title"]))
    keys = by_step["layout"]["xaxis"]["ticktext"]
    assert keys[:10] == ["&lt;bos&gt;", "s", "t", "r", "e", "s", "s", "e", "d", "="]  # tick text is HTML
    assert any("no cross-attention" in info.value for info in at.info)


def test_inside_the_layers_has_only_the_decoder():
    at = run_page("layers", **DECODER_ONLY)
    assert at.radio(key="stack").options == ["Decoder"] or len(at.radio(key="stack").options) == 1


def test_the_overview_draws_the_decoder_alone():
    at = run_page("overview", **DECODER_ONLY)
    diagram = json.dumps(chart_specs(at)[0])
    assert "Decoder-only Transformer" in diagram and "Cross-attention" not in diagram
    assert "encoder.frame" not in diagram and "decoder.frame" in diagram


def test_compare_puts_the_encoder_decoder_beside_the_decoder_only_model_with_both_exact_matches():
    at = run_page("compare", a_variant="encoder_decoder", b_variant="decoder_only", b_weights="pretrained")
    assert not at.exception and not at.error
    assert [metric.value for metric in at.metric] == ["100%", "100%"]
    assert any("B is decoder-only" in caption.value for caption in at.caption)
    assert len(at.get("plotly_chart")) == 2  # no cell-by-cell difference between two different attentions
    assert at.selectbox(key="kind").options == ["Encoder self-attention", "Decoder masked self-attention",
                                                "Cross-attention (decoder → encoder)"]  # A's three


def test_compare_offers_only_the_attention_two_decoder_only_models_have():
    at = run_page("compare", **DECODER_ONLY)
    assert not at.exception and not at.error
    assert at.selectbox(key="kind").options == ["Decoder masked self-attention"]
    assert not any("decoder-only" in caption.value for caption in at.caption)  # nothing missing to explain
    assert len(at.get("plotly_chart")) == 3  # A, B and B − A


def test_the_induction_task_is_offered_to_a_decoder_only_model_only_and_opens_with_its_shape():
    encoder_decoder = run_page("attention")
    assert "induction" not in encoder_decoder.selectbox(key="task").options[-1].lower()
    at = run_page("embeddings", task="induction", src_text="qwhzkvmcatj", **DECODER_ONLY)
    at.selectbox(key="task").set_value("reverse").run()
    at.selectbox(key="task").set_value("induction").run()  # the pretrained weights bring their shape
    assert at.session_state["positional"] == "rotary" and not at.exception and not at.error
    assert any("Decoder-only (GPT-style)" in caption.value for caption in at.caption)
    rotation = next(spec for spec in chart_specs(at) if "Rotary embeddings" in json.dumps(spec["layout"]["title"]))
    angles = typed_array(rotation["data"][0]["z"])  # (positions, pairs), degrees
    assert angles.shape[1] == 8  # d_head 16: 8 pairs
    assert angles[2, 0] == pytest.approx(math.degrees(2))  # position 2 turns pair 0 by 2 radians
    assert angles[7, 0] == pytest.approx(math.degrees(7) % 360)  # shown modulo a full turn


def test_training_a_fresh_decoder_only_model_shows_its_self_attention_taking_shape():
    at = run_page("training", n_heads=2, d_model=16, d_ff=32, weights="random", **DECODER_ONLY)
    at.select_slider(key="train_steps").set_value(100).run()
    at.button(key="training_start").click().run()
    assert not at.exception, at.exception
    assert at.session_state["weights"] == "trained"
    animation = chart_specs(at)[1]
    assert len(animation["frames"]) >= 2
    assert "=" in json.dumps(animation["layout"]["xaxis"]), "the columns are the one stream's tokens, \"=\" included"
    assert "Masked self-attention over prompt and answer" in json.dumps(animation["layout"]["title"])
