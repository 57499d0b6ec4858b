"""The notice of a window narrower than the figures are laid out for (app/frame/narrow_window.py), in Chromium:
a 1280 px screen at 150 % zoom (853 × 480 CSS px at device scale 1.5) with the sidebar open leaves the main
column ~520 px of the 790 the figures are built for."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from devtools.browser import RUN_COUNTER, chromium, exceptions, open_app
from transformer_viz.app.server import state
from transformer_viz.i18n import text

pytestmark = pytest.mark.browser  # skipped, saying why, where Chromium is missing (conftest.py)

NOTICE = f".st-key-{state.NARROW_NOTICE}"


@pytest.fixture(scope="module")
def browser():
    """Chromium with its scrollbars shown, as on a Windows or Linux desktop (headless, Playwright hides them): the
    page's scrollbar takes 10 px of the main column at 150 % zoom."""
    with chromium(scrollbars=True) as launched:
        yield launched


def opened(browser, url: str, width: int, height: int, scale: float):
    """A page of its own browser context, `width` × `height` CSS px at device scale `scale`, with `url` loaded."""
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=scale)
    context.add_init_script(RUN_COUNTER)
    page = context.new_page()
    open_app(page, url)
    assert exceptions(page) == []
    return page


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_narrow_main_column_says_how_to_give_the_figures_room_until_the_sidebar_is_hidden(app_url, browser, lang):
    page = opened(browser, f"{app_url}/attention?lang={lang}", 853, 480, 1.5)
    try:
        notice = page.locator(NOTICE)
        expect(notice).to_be_visible()
        expect(notice).to_contain_text(text("frame.narrow", lang))
        page.get_by_test_id("stSidebar").hover()  # Streamlit shows its « button on hover
        page.get_by_test_id("stSidebarCollapseButton").get_by_role("button").click()
        expect(notice).to_be_hidden(timeout=30_000)  # the main column is 790 px or more once the sidebar is gone
    finally:
        page.context.close()


@pytest.mark.parametrize("path, width, height, scale", [("/attention", 1280, 720, 1.0),
                                                       ("/attention?present=true", 853, 480, 1.5)])
def test_a_main_column_as_wide_as_the_figures_shows_no_notice_beside_a_scrollbar(app_url, browser, path, width,
                                                                                 height, scale):
    """At 1280 × 720 with the sidebar open, and in presenter mode at 150 % (no sidebar: 796 px, 786 beside the
    page's scrollbar)."""
    page = opened(browser, f"{app_url}{path}", width, height, scale)
    try:
        expect(page.locator(NOTICE)).to_be_attached()
        expect(page.locator(NOTICE)).to_be_hidden()
    finally:
        page.context.close()


LABELS = """() => [...document.querySelectorAll('[data-testid=stMain] button [data-testid=stMarkdownContainer]')]
    .filter(label => label.innerText.trim()).map(label => ({
        text: label.innerText.trim(), hidden: label.getBoundingClientRect().width <= 1,
        cut: label.scrollWidth > label.clientWidth}))"""


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("path, width, height, scale, arrows_only", [
    ("/lesson", 1280, 720, 1.0, False), ("/lesson?present=true", 1280, 720, 1.0, False),
    ("/lesson", 853, 480, 1.5, True), ("/lesson?present=true", 853, 480, 1.5, True)])
def test_the_lessons_buttons_cut_no_label(app_url, browser, lang, path, width, height, scale, arrows_only):
    """Streamlit ends a label that does not fit with "…": "Pr…" and "Open this in the ex…" at 150 % with the sidebar
    open, "Previo…" in presenter mode at 150 %. There Previous and Next keep only their arrows, still named for a
    screen reader, and the other buttons wrap their words."""
    separator = "&" if "?" in path else "?"
    page = opened(browser, f"{app_url}{path}{separator}lang={lang}", width, height, scale)
    try:
        labels = page.evaluate(LABELS)
        nav = {text("lesson.previous", lang), text("lesson.next", lang)}
        assert {label["text"] for label in labels} >= nav | {text("lesson.open", lang), text("lesson.reset", lang)}
        assert [label["text"] for label in labels if label["cut"] and not label["hidden"]] == []
        assert {label["text"] for label in labels if label["hidden"]} == (nav if arrows_only else set())
        for name in nav:
            expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()
    finally:
        page.context.close()
