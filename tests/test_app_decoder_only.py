"""Every page on a decoder-only (GPT-style) model in Streamlit's AppTest: what it shows, and what it says it has not."""

import json

import pytest
from test_app import PAGES, chart_specs, run_page

DECODER_ONLY = {"architecture": "decoder_only"}


@pytest.mark.parametrize("page", PAGES)
def test_every_page_draws_the_shipped_decoder_only_model(page):
    at = run_page(page, **DECODER_ONLY)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    if page != "training":
        assert at.get("plotly_chart"), "the page drew no figure"
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
