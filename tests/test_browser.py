"""The app in a real Chromium: it loads, a control change redraws the grid, a click opens a head."""

from pathlib import Path

import pytest
from browser import browser_missing_reason, chromium_page, streamlit_server, wait_for_rerun

missing = browser_missing_reason()
pytestmark = pytest.mark.skipif(missing is not None, reason=f"no real browser here: {missing}")
SCREENSHOTS = Path(__file__).resolve().parent.parent / "artifacts"

TILE_COUNT = """() => {
  const grid = document.querySelector('.js-plotly-plot');
  return grid.data.filter(t => t.type === 'scatter').reduce((n, t) => n + t.x.length, 0);
}"""


@pytest.fixture(scope="module")
def app_url():
    with streamlit_server() as url:
        yield url


def test_attention_page_in_chromium(app_url):
    with chromium_page() as page:
        page.goto(f"{app_url}/attention")
        page.wait_for_selector(".js-plotly-plot", timeout=90_000)
        wait_for_rerun(page)
        assert page.locator("[data-testid=stException]").count() == 0
        assert page.evaluate(TILE_COUNT) == 2 * 4

        # Change the heads control in the sidebar: open the expander, pick 8 heads.
        page.get_by_text("Shape and variants").click()
        page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").filter(has_text="heads").click()
        page.get_by_role("option", name="8", exact=True).click()
        wait_for_rerun(page)
        page.wait_for_function(f"({TILE_COUNT})() === 16", timeout=60_000)
        assert page.locator("[data-testid=stException]").count() == 0

        # Click the tile of layer 2, head 5: the large view follows.
        marker = page.locator(".js-plotly-plot").first.locator(".scatterlayer .point").nth(1 * 8 + 4)
        marker.click(force=True)
        wait_for_rerun(page)
        page.get_by_text("Layer 2, head 5").first.wait_for(timeout=60_000)
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "attention.png"), full_page=False)
