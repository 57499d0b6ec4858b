"""The app in a real Chromium: it loads, a control change redraws the grid, a click opens a head."""

import contextlib
import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from devtools.browser import (
    choose_option,
    chromium_page,
    exceptions,
    open_app,
    point_position,
    rerun_after,
    streamlit_server,
)
from transformer_viz.i18n import text

pytestmark = pytest.mark.browser  # skipped, saying why, where Chromium is missing (conftest.py)

# The grid is the first Plotly chart of the Attention page; its click layer (the scatter trace
# named "tiles") has one marker per (layer, head) tile at the tile's centre.
GRID = "document.querySelector('.js-plotly-plot')"
TILES = f"""() => {{
  const data = {GRID}.data;
  const tiles = data.find(t => t.name === 'tiles') || data.find(t => t.type === 'scatter');
  return {{count: tiles.x.length, layers: new Set(tiles.y).size, heads: new Set(tiles.x).size}};
}}"""


# The index of a (layer, head) tile's point in the grid's "tiles" trace.
TILE_POINT = f"""([layer, head]) => {{
  const tiles = {GRID}.data.find(t => t.name === 'tiles');
  return tiles.customdata.findIndex(c => c[0] === layer && c[1] === head);
}}"""


def tile_count_is(count: int) -> str:
    return f"({TILES})().count === {count}"


@pytest.fixture
def screenshots(tmp_path) -> Path:
    """Where screenshots go: $TV_SCREENSHOTS when set (to look at them), else the test's tmp_path."""
    folder = Path(os.environ.get("TV_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def app_url():
    with streamlit_server() as url:
        yield url


def test_attention_page_in_chromium(app_url, screenshots):
    with chromium_page() as page:
        open_app(page, f"{app_url}/attention")
        assert exceptions(page) == []
        tiles = page.evaluate(TILES)
        layers = tiles["layers"]  # read from the page: the default model's shape may change
        assert tiles["heads"] == 4, tiles
        assert tiles["count"] == layers * 4, tiles

        # Change the heads control in the sidebar: open the expander, pick 8 heads.
        sidebar = page.get_by_test_id("stSidebar")
        heads_drawn = ("Array.from(document.querySelectorAll('[data-testid=stSidebar] [data-testid=stSelectbox]'))"
                       ".some(box => box.textContent.includes('heads'))")
        rerun_after(page, lambda: sidebar.get_by_text("Shape and variants").click(), until=heads_drawn)
        heads = sidebar.get_by_test_id("stSelectbox").filter(
            has=page.get_by_test_id("stWidgetLabel").filter(has_text="heads"))
        rerun_after(page, lambda: choose_option(page, heads, "8"), until=tile_count_is(layers * 8))
        assert exceptions(page) == []
        tiles = page.evaluate(TILES)
        assert tiles == {"count": layers * 8, "layers": layers, "heads": 8}, tiles

        # Click the tile of the last layer, head 5: the large view follows (a full rerun).
        layer, head = layers - 1, 4
        x, y = point_position(page, 0, "tiles", page.evaluate(TILE_POINT, [layer, head]))
        title_text = f"Layer {layer + 1}, head {head + 1}"
        title = page.get_by_role("heading", name=title_text, exact=True)
        shown = f"Array.from(document.querySelectorAll('h3')).some(h => h.textContent.trim() === '{title_text}')"
        rerun_after(page, lambda: page.mouse.click(x, y), until=shown)
        title.wait_for(timeout=30_000)
        assert exceptions(page) == []
        title.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / "attention.png"), full_page=False)
        page.locator(".js-plotly-plot").first.screenshot(path=str(screenshots / "attention_grid.png"))


def test_clicking_a_cell_of_the_large_view_shows_its_arithmetic(app_url, screenshots):
    with chromium_page() as page:
        open_app(page, f"{app_url}/attention?src_text=stressed")
        x, y = point_position(page, 1, "cells", 3)  # the large view's click layer: query 0 (<bos>), key 3
        shown = "Array.from(document.querySelectorAll('h4')).some(h => h.textContent.includes('→ key'))"
        rerun_after(page, lambda: page.mouse.click(x, y), until=shown)
        assert exceptions(page) == []
        heading = page.locator("h4").filter(has_text="→ key").first.text_content()
        assert heading.startswith("Query <bos> → key e"), heading  # query <bos>, key 3 of "stressed" is "e"
        table = page.get_by_test_id("stTable")  # the row's masked scores and softmax
        table.first.wait_for(timeout=30_000)  # elements of a rerun arrive one after another
        assert table.count() == 1
        table.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / "attention_cell.png"))


# Every time Plotly draws a heatmap it sets its <image>'s href: counted per chart (its Streamlit key).
COUNT_DRAWS = """() => { window.__tvDraws = {};
  new MutationObserver(records => { for (const record of records) {
    const chart = record.target.closest('[class*=st-key-attention_]');
    if (record.target.tagName !== 'image' || record.attributeName !== 'href' || !chart) continue;
    const key = [...chart.classList].find(name => name.startsWith('st-key-'));
    window.__tvDraws[key] = (window.__tvDraws[key] || 0) + 1; } })
  .observe(document.body, {subtree: true, attributes: true}); }"""
CHARTS = ("grid", "head")
REVISIONS = """() => Object.fromEntries(['grid', 'head'].map(name =>
  [name, document.querySelector(`.st-key-attention_${name} .js-plotly-plot`).layout.datarevision]))"""
# Both charts show new data, and Streamlit has handed each its width (its second Plotly.react, a JSON copy).
DRAWN = """(before) => ['grid', 'head'].every(name => {
  const plot = document.querySelector(`.st-key-attention_${name} .js-plotly-plot`);
  return plot && plot.layout.width !== undefined && plot.layout.datarevision !== before[name]; })"""
HEATMAPS = """(name) => document.querySelector(`.st-key-attention_${name} .js-plotly-plot`).data
  .filter(trace => trace.type === 'heatmap').length"""


@pytest.mark.parametrize("architecture", ["encoder_decoder", "decoder_only"])
def test_a_change_draws_each_chart_once(app_url, architecture):
    """Streamlit hands Plotly.js each new chart twice; the spec says nothing changed the second time
    (app/server/browser_spec.py), so each heatmap is drawn once, not twice."""
    with chromium_page() as page:
        open_app(page, f"{app_url}/attention?architecture={architecture}")
        draw = page.get_by_test_id("stSelectbox").filter(has=page.get_by_test_id("stWidgetLabel").filter(
            has_text=text("attention.value", "en")))
        page.evaluate(COUNT_DRAWS)
        for option in (text("value.scores", "en"), text("value.weights", "en")):
            before = page.evaluate(REVISIONS)
            page.evaluate("window.__tvDraws = {}")
            rerun_after(page, lambda option=option: choose_option(page, draw, option),
                        until=f"({DRAWN})({json.dumps(before)})")
            drawn = page.evaluate("window.__tvDraws")
            expected = {f"st-key-attention_{name}": page.evaluate(HEATMAPS, name) for name in CHARTS}
            assert drawn == expected, f"{option}: image draws {drawn}, heatmaps {expected}"
        assert exceptions(page) == []


def test_a_click_on_the_architecture_opens_the_block_page_and_keeps_the_view(app_url):
    with chromium_page() as page:
        open_app(page, f"{app_url}/overview?n_heads=2&src_text=banana")  # / is the lesson
        index = page.evaluate("document.querySelector('.js-plotly-plot').data[0].customdata"
                              ".findIndex(c => (Array.isArray(c) ? c[0] : c) === 'masks')")
        assert index >= 0
        x, y = point_position(page, 0, "blocks", index)
        shown = "Array.from(document.querySelectorAll('h1')).some(h => h.textContent.trim() === 'Masks')"
        rerun_after(page, lambda: page.mouse.click(x, y), until=shown)
        assert exceptions(page) == []
        page.wait_for_function("document.location.pathname === '/masks'", timeout=30_000)
        address = page.evaluate("document.location.search")
        assert "n_heads=2" in address and "src_text=banana" in address, address


def test_stop_ends_a_long_training_before_its_last_step_and_keeps_what_it_trained(app_url):
    """The largest model within the training budget: Stop ends the run (how fast is bench/ business, not a test's)
    and the session keeps the steps it trained."""
    import re
    from urllib.parse import urlencode

    link = urlencode({"weights": "random", "d_model": "256", "n_heads": "8", "n_encoder_layers": "6",
                      "n_decoder_layers": "6", "d_ff": "512", "train_steps": "100", "train_batch": "32"})
    with chromium_page() as page:
        page.goto(f"{app_url}/training?{link}")
        start = page.get_by_role("button", name="Train", exact=True)
        start.click()
        stop = page.get_by_role("button", name="Stop", exact=True)
        stop.wait_for(timeout=60_000)
        page.get_by_test_id("stProgress").wait_for(timeout=60_000)  # its worker has done a step
        stop.click()
        banner = page.get_by_text(re.compile(r"Weights you trained .* \((\d+) steps\)"))
        banner.wait_for(timeout=120_000)
        steps = int(re.search(r"\((\d+) steps\)", banner.inner_text()).group(1))
        assert 0 < steps < 100
        assert exceptions(page) == []


@pytest.mark.parametrize("lang, button, limit", [("zh", "上传", "每个文件最多 16 MB"),
                                                 ("en", "Upload", "At most 16 MB per file")])
def test_the_weights_uploader_speaks_the_sessions_language(app_url, lang, button, limit):
    """Streamlit writes "Upload" and "16MB per file" in English only: the page draws the catalog's words instead."""
    with chromium_page() as page:
        open_app(page, f"{app_url}/training?lang={lang}", figures=False)
        words = """() => {
            const zone = document.querySelector('[data-testid=stFileUploaderDropzone]');
            const shown = element => {
                if (element === null) return null;
                const own = getComputedStyle(element), after = getComputedStyle(element, '::after');
                return own.fontSize === '0px' ? JSON.parse(after.content) : element.innerText;
            };
            return zone && [shown(zone.querySelector('button [data-testid=stMarkdownContainer] p')),
                            shown(zone.querySelector('[data-testid=stFileUploaderDropzoneInstructions] span'))];
        }"""
        # the uploader and the style that renames its words arrive as separate elements: wait until both are drawn
        expected = json.dumps([button, limit], ensure_ascii=False)
        with contextlib.suppress(PlaywrightTimeout):  # the assertion below shows what is drawn instead
            page.wait_for_function(f"() => JSON.stringify(({words})()) === JSON.stringify({expected})",
                                   timeout=60_000)
        drawn = page.evaluate(words)
        assert drawn == [button, limit]
        assert exceptions(page) == []
