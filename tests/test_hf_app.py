"""The app on a Hugging Face model: every page renders for each family (tiny offline models), links restore it."""

import sys

import pytest

from tests.test_app import run_page
from transformer_viz.app.frame.navigation import PAGES
from transformer_viz.weights import hf

missing = hf.missing_reason()
TOY_ONLY = ("training", "break_it", "compare")
pytestmark = pytest.mark.hf


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    if missing is not None:
        pytest.skip(missing)
    from devtools.hf_tiny import save_tiny

    with pytest.MonkeyPatch.context() as patch:  # the server opens folders under TVIZ_HF_DIRS only
        patch.setenv("TVIZ_HF_DIRS", str(tmp_path_factory.getbasetemp()))
        yield {family: str(save_tiny(family, tmp_path_factory.mktemp(family))) for family in hf.FAMILIES}


@pytest.mark.parametrize("family", hf.FAMILIES)
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_for_a_hugging_face_model(folders, family, page):
    at = run_page(page, source="hf", hf_model=folders[family], src_text="the cat sat on the mat")
    assert not at.exception, at.exception[0].message if at.exception else ""
    assert not at.error, at.error[0].value
    shown = [*at.caption, *at.info, *at.markdown]
    texts = " ".join(element.value for element in shown if isinstance(element.value, str))
    if page in TOY_ONLY:
        assert "toy model" in texts
    elif page != "lesson":  # the lesson runs its own toy models
        assert f"Hugging Face model ` {folders[family]} ` ({family})" in texts
        if page in ("attention", "masks", "decoding"):
            chips = "".join(html.proto.body for html in at.get("html"))
            assert ">▁" in chips and "&lt;/s&gt;" in chips  # the tokenizer's own pieces and end token


def test_a_link_restores_a_hugging_face_model_and_a_missing_one_is_named(folders):
    at = run_page("attention", link={"source": "hf", "hf_model": folders["bart"]})
    assert at.session_state["source"] == "hf" and at.session_state["hf_model"] == folders["bart"]
    assert not at.exception and not at.error
    at = run_page("attention", source="hf", hf_model="not/a-model-here")
    assert "could not be loaded" in at.error[0].value and "downloads are off" in at.error[0].value


def test_without_the_extra_the_page_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    at = run_page("attention", source="hf", hf_model="Helsinki-NLP/opus-mt-en-zh")
    assert not at.exception
    assert "pip install '.[hf]'" in at.error[0].value
    assert "pip install '.[hf]'" in " ".join(caption.value for caption in at.sidebar.caption)


def test_a_server_can_forbid_downloads(monkeypatch):
    from dataclasses import replace

    from transformer_viz.app.frame import sidebar
    from transformer_viz.app.server import models

    no_downloads = replace(sidebar.limits(), hf_downloads=0)
    monkeypatch.setattr(sidebar, "limits", lambda: no_downloads)
    monkeypatch.setattr(models, "limits", lambda: no_downloads)
    asked = []

    def load(name, allow_download):
        asked.append(allow_download)
        raise ValueError("not on this server")

    monkeypatch.setattr(models, "hugging_face_model", load)
    models.load_failure.clear()  # an earlier test's failure to load this name is remembered
    at = run_page("attention", source="hf", hf_model="Helsinki-NLP/opus-mt-en-zh", _hf_download=True)
    assert not at.exception and asked and not any(asked)
    assert not at.sidebar.checkbox and "TVIZ_HF_DOWNLOADS=0" in " ".join(c.value for c in at.sidebar.caption)


def test_t5_self_attention_shows_the_bias_it_adds_and_no_division(folders):
    from tests.test_app import chart_specs

    view = dict(source="hf", hf_model=folders["t5"], src_text="the cat sat on the mat", kind="encoder_self",
                cell_query=1, cell_key=2)
    at = run_page("head", **view)
    assert not at.exception and not at.error and not at.info
    titles = [spec["layout"]["title"]["text"] for spec in chart_specs(at)]
    assert any(" + B " in title and "(not divided by √d_head)" in title for title in titles), titles
    assert any("T5 does not divide by √d_k" in markdown.value for markdown in at.markdown)
    assert not any("Divide by √d_k" in markdown.value for markdown in at.markdown)
    at = run_page("attention", **view)
    metrics = {metric.label: metric.value for metric in at.metric}
    assert "+ relative position bias" in metrics and "÷ 1 (√d_k is folded into W_Q)" in metrics, metrics
    at = run_page("attention", **{**view, "kind": "cross"})
    assert "+ relative position bias" not in {metric.label for metric in at.metric}


def test_a_model_beyond_the_servers_size_is_refused_in_both_languages(folders, monkeypatch):
    from dataclasses import replace

    from transformer_viz.app.server import models

    small = replace(models.limits(), hf_parameters=1000)
    monkeypatch.setattr(models, "limits", lambda: small)
    models.hugging_face_model.clear()
    try:
        at = run_page("attention", source="hf", hf_model=folders["t5"])
        assert "parameters; this server loads models of at most 1,000" in at.error[0].value
        at = run_page("attention", lang="zh", source="hf", hf_model=folders["t5"])
        assert "这台服务器最多加载 1,000 个参数的模型" in at.error[0].value
        at = run_page("attention", lang="zh", source="hf", hf_model="not/a-model-here")
        assert "无法从本地文件夹或本地缓存加载 'not/a-model-here'（下载已关闭）" in at.error[0].value
    finally:
        models.hugging_face_model.clear()
