"""axe-core (axe-playwright-python) in a real Chromium finds no serious or critical violation on any screen: every
page and every lesson step, in English and 中文, in presenter mode and not, at 1280 × 720 and on a 390 × 844 phone.

Each screen is checked in one of the eight combinations of language, presenter mode and window, taken in turn, so
that every screen and every combination is checked (TV_AXE=full: every screen in every combination). A new page or
step is checked without anyone adding it.
"""

import itertools
import os

import pytest

from devtools.browser import new_page, open_app
from transformer_viz.app.frame.navigation import HOME, PAGES
from transformer_viz.lessons import STEPS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREENS = [f"/{'' if page == HOME else page}?" for page in PAGES] + [
    f"/?lesson_step={number}&" for number in range(1, len(STEPS) + 1)]
COMBINATIONS = list(itertools.product(("en", "zh"), (False, True), ((1280, 720), (390, 844))))
CASES = ([(screen, *combination) for screen in SCREENS for combination in COMBINATIONS] if os.environ.get("TV_AXE")
         == "full" else [(screen, *COMBINATIONS[i % len(COMBINATIONS)]) for i, screen in enumerate(SCREENS)])
SERIOUS = ("serious", "critical")
# The app's own style (main.py's CONTRAST_STYLE) is an st.html element, drawn once its code has loaded: a little
# after the first run is idle. Until then the page has Streamlit's own colours, which is what it fixes.
STYLED = ("() => [...document.querySelectorAll('style')].some(s => s.textContent.includes('stCaptionContainer'))")


@pytest.fixture(scope="module")
def axe():
    pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is a test requirement")
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


@pytest.mark.parametrize(("screen", "lang", "present", "window"), CASES)
def test_no_serious_accessibility_violation(app_url, browser, axe, screen, lang, present, window):
    page = new_page(browser, *window)
    open_app(page, f"{app_url}{screen}lang={lang}{'&present=true' if present else ''}", figures=False)
    page.wait_for_function(STYLED, timeout=60_000)
    violations = axe.run(page).response["violations"]
    page.close()
    serious = {v["id"]: [node["target"][-1] for node in v["nodes"]] for v in violations if v["impact"] in SERIOUS}
    assert not serious, f"axe-core on {screen} ({lang}, presenter {present}, {window}): {serious}"
