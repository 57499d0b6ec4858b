"""Hugging Face models in a real Chromium: the three families' pages drawn from a link, and one chosen by hand."""

import os
import urllib.parse
from pathlib import Path

import pytest

from devtools.browser import (
    chromium_page,
    exceptions,
    full_page_screenshot,
    open_app,
    rerun_after,
    streamlit_server,
)
from transformer_viz.weights import hf

missing = hf.missing_reason()
pytestmark = [pytest.mark.hf, pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(missing is not None, reason=f"{missing}")]
PAGES = {"attention": "Attention", "masks": "Masks", "head": "Inside one head", "decoding": "Decoding",
         "overview": "Overview", "embeddings": "Embeddings", "layers": "Inside the layers"}
CHARTS = "document.querySelectorAll('[data-testid=stMain] .js-plotly-plot').length"
HEADING = "document.querySelector('h1')?.innerText.trim()"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    from devtools.hf_tiny import save_tiny

    with pytest.MonkeyPatch.context() as patch:  # the server opens folders under TVIZ_HF_DIRS only
        patch.setenv("TVIZ_HF_DIRS", str(tmp_path_factory.getbasetemp()))
        yield {family: str(save_tiny(family, tmp_path_factory.mktemp(family))) for family in hf.FAMILIES}


@pytest.fixture
def screenshots(tmp_path) -> Path:
    folder = Path(os.environ.get("TV_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("family", hf.FAMILIES)
def test_each_family_is_drawn_on_every_page_that_reads_a_trace(family, folders, screenshots):
    link = urllib.parse.urlencode({"source": "hf", "hf_model": folders[family],
                                   "src_text": "the cat sat on the mat"})
    pages = PAGES if family == "marian" else ("attention", "head", "decoding", "embeddings")  # CI's minutes
    with streamlit_server() as url, chromium_page() as page:
        for path in pages:
            no_encoding = family == "t5" and path == "embeddings"  # T5 has none to draw: it says so instead
            open_app(page, f"{url}/{path}?{link}", figures=not no_encoding)
            assert page.evaluate(f"() => {HEADING}").startswith(PAGES[path]), path
            assert exceptions(page) == [], (path, exceptions(page))
            assert page.get_by_text(f"({family}):").count() == 1, path  # the banner names the model
            if no_encoding:
                assert page.get_by_text("adds no positional encoding").count() == 1
            else:
                assert page.evaluate(f"() => {CHARTS}") >= 1, path
            if path == "attention":
                full_page_screenshot(page, str(screenshots / f"hf_{family}_attention.png"))


def test_a_teacher_switches_the_model_source_in_the_sidebar(folders, screenshots):
    with streamlit_server() as url, chromium_page() as page:
        open_app(page, f"{url}/attention")
        sidebar = page.get_by_test_id("stSidebar")
        rerun_after(page, sidebar.get_by_text("Hugging Face model", exact=True).click,
                    until="document.querySelector('[data-testid=stSidebar] input[aria-label^=\"Hugging Face model\"]')"
                          " !== null")
        box = sidebar.get_by_label("Hugging Face model: a local folder or a name")
        rerun_after(page, lambda: (box.fill(folders["marian"]), box.press("Enter")),
                    until=f"{CHARTS} >= 1 && document.body.innerText.includes('(marian):')")
        assert exceptions(page) == []
        assert "source=hf" in page.url and "hf_model=" in page.url
        page.screenshot(path=str(screenshots / "hf_sidebar_en.png"))
        zh = sidebar.get_by_test_id("stRadio").first.get_by_text("中文")
        rerun_after(page, zh.click, until=f"{HEADING} === '注意力'")
        assert exceptions(page) == [] and page.get_by_text("Hugging Face 模型").count() >= 1
        page.screenshot(path=str(screenshots / "hf_sidebar_zh.png"))
