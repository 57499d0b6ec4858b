"""The app in Streamlit's AppTest: every page for several configurations, controls, bad input."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGES = ("overview", "embeddings", "attention", "masks", "head", "decoding", "training")
CONFIGS = {
    "default": {},
    "one_head": {"n_heads": 1},
    "eight_heads": {"n_heads": 8},
    "post_ln_no_positions": {"norm_first": False, "positional": "none"},
}


def page_script(page: str) -> None:
    import importlib

    from app_pages.sidebar import render_sidebar

    render_sidebar()
    importlib.import_module(f"app_pages.{page}").render()


def run_page(page: str, **state) -> AppTest:
    at = AppTest.from_function(page_script, args=(page,), default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def grid_tiles(at: AppTest) -> int:
    """Markers of the click layer over the attention grid: one per (layer, head) tile."""
    grid = chart_specs(at)[0]
    overlay = [trace for trace in grid["data"] if trace["type"] == "scatter"]
    return sum(len(trace["x"]) for trace in overlay)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders(page, config):
    at = run_page(page, **CONFIGS[config])
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    if page != "training":
        assert at.get("plotly_chart"), "the page drew no figure"


def test_the_whole_app_starts_on_the_overview():
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120).run()
    assert not at.exception and not at.error
    assert any("Overview" in title.value for title in at.title)


def test_changing_heads_changes_the_number_of_tiles():
    at = run_page("attention")
    assert grid_tiles(at) == 2 * 4  # pretrained default: 2 encoder layers x 4 heads
    at.sidebar.selectbox(key="n_heads").set_value(8).run()
    assert not at.exception
    assert grid_tiles(at) == 2 * 8
    assert any("Random weights" in w.value for w in at.warning)


def test_clicking_through_kinds_and_values():
    at = run_page("attention")
    for kind in ("encoder_self", "decoder_self", "cross"):
        at.selectbox(key="w_kind").set_value(kind).run()
        assert not at.exception
    at.selectbox(key="w_value").set_value("masked_scores").run()
    assert not at.exception and chart_specs(at)


@pytest.mark.parametrize("state, message", [
    ({"src_text": ""}, "empty"),
    ({"src_text": "x" * 200}, "at most"),
    ({"d_model": 63, "n_heads": 1}, "even"),
    ({"tgt_text": "y" * 200}, "at most"),
])
def test_bad_input_shows_an_error_not_an_exception(state, message):
    at = run_page("attention", **state)
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]


def test_unknown_characters_are_shown_as_unk_with_a_warning():
    at = run_page("attention", src_text="héllo")
    assert not at.exception and not at.error
    assert any("<unk>" in w.value and "é" in w.value for w in at.warning)


def test_a_link_with_heads_that_do_not_divide_d_model_is_fixed_with_a_message():
    at = AppTest.from_function(page_script, args=("attention",), default_timeout=120)
    at.query_params["n_heads"] = "5"
    at.run()
    assert not at.exception
    assert any("cannot split" in w.value for w in at.sidebar.warning)
    assert at.session_state["n_heads"] == 4


def test_view_round_trips_through_the_link():
    at = AppTest.from_function(page_script, args=("attention",), default_timeout=120)
    at.query_params.update({"n_heads": "2", "kind": "cross", "layer": "1", "src_text": "abc"})
    at.run()
    assert not at.exception and not at.error
    assert at.session_state["n_heads"] == 2 and at.session_state["kind"] == "cross"
    assert at.query_params["src_text"] == ["abc"] or at.query_params["src_text"] == "abc"


def test_a_corrupt_checkpoint_falls_back_to_random_weights_with_a_message(tmp_path, monkeypatch):
    import shutil

    import streamlit as st

    import transformer_viz.pretrained as pretrained

    shutil.copy(pretrained.CHECKPOINT_DIR / "reverse.json", tmp_path / "reverse.json")
    (tmp_path / "reverse.safetensors").write_bytes(b"\x00not a safetensors file")
    monkeypatch.setattr(pretrained, "CHECKPOINT_DIR", tmp_path)
    st.cache_resource.clear()
    try:
        at = run_page("attention")
        assert not at.exception and not at.error
        assert any("Random weights" in w.value for w in at.warning)
        assert any("could not be loaded" in c.value for c in at.caption)
    finally:
        st.cache_resource.clear()


def test_training_a_copy_of_the_model_switches_the_view_to_it():
    at = run_page("training", n_heads=2, d_model=16, d_ff=32, weights="random")
    at.select_slider(key="training_steps").set_value(100).run()
    at.button(key="training_start").click().run()
    assert not at.exception, at.exception
    assert at.session_state["weights"] == "trained"
    assert any("Weights you trained" in i.value for i in at.info)
    specs = chart_specs(at)
    assert len(specs) == 2  # the loss curve and the attention animation
    assert len(specs[1]["frames"]) >= 2


def test_a_fresh_model_with_a_longer_max_len_reads_a_long_input():
    long_text = "abcdefghijklmnopqrstuvwxyzabcde"  # 31 letters + <eos> = 32 tokens
    at = run_page("attention", src_text=long_text)
    assert any("at most 12" in e.value for e in at.error)
    at = run_page("attention", src_text=long_text, max_len=32, n_encoder_layers=6, n_heads=8, weights="random")
    assert not at.exception and not at.error
    assert grid_tiles(at) == 2 * 8  # the default view is the decoder's cross-attention (2 layers)
