"""A link copied from the address bar opens the same view, however the view was reached: after the lesson set it
up, through "Open this in the explorer", and as a student following a teacher's room. Each link is opened in a new
browser context (a new student, no session) and must draw the same figures with the same widgets."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from devtools.browser import (
    choose_option,
    exceptions,
    new_page,
    open_app,
    open_menu_page,
    rerun_after,
    slide_to,
    snapshot_in_new_context,
    view_snapshot,
    wait_for_idle,
)
from devtools.rooms import FOLLOW_DEADLINE_MS, start_room
from transformer_viz.app.server.state import VIEW_FIELDS

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # browser: skipped, saying why, without Chromium



def snapshot(page) -> tuple[str, list, dict]:
    """The page's address, its figures' data and what its view widgets show, once its run has finished."""
    seen = view_snapshot(page, VIEW_FIELDS)
    assert exceptions(page) == []
    return seen


def assert_same_view(browser, name: str, seen: tuple[str, list, dict]) -> None:
    url, figures, widgets = seen
    (_, fresh_figures, fresh_widgets), errors = snapshot_in_new_context(browser, url, figures, widgets,
                                                                            VIEW_FIELDS)
    assert errors == [], (name, url)
    assert fresh_widgets == widgets, (name, url)
    assert fresh_figures == figures, (name, url)


def params(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_links_copied_after_the_lesson_open_the_same_view(app_url, browser):
    page = new_page(browser)
    open_app(page, app_url)  # the Lesson: its first step sets the task (English → French) and the input up
    seen = {}

    open_menu_page(page, "Inside one head")
    choose = page.locator(".st-key-cell_query")
    rerun_after(page, lambda: choose_option(page, choose, "3: noir"), until="location.search.includes('cell_query=3')")
    seen["head"] = snapshot(page)
    linked = params(seen["head"][0])
    assert linked["task"] == ["en-fr"] and linked["cell_query"] == ["3"]  # ids: a position, not "3: noir"
    assert linked["src_text"] == ["the black cat sees the small dog"]

    open_menu_page(page, "Decoding")
    slide_to(page, "step", 6)
    seen["decoding"] = snapshot(page)
    assert params(seen["decoding"][0])["step"] == ["6"]

    open_menu_page(page, "Masks")
    slide_to(page, "pad", 16)
    seen["masks"] = snapshot(page)

    open_menu_page(page, "Lesson", figures=False)
    page.locator(".st-key-lesson_next button").click()  # step 2, then its "open this in the explorer"
    wait_for_idle(page)
    explorer = page.get_by_role("button", name="Open this in the explorer")
    rerun_after(page, explorer.click, until="location.pathname !== '/'")
    page.wait_for_selector(".js-plotly-plot:visible", timeout=FOLLOW_DEADLINE_MS)
    seen["explorer"] = snapshot(page)

    for name, view in seen.items():
        assert_same_view(browser, name, view)


def test_a_students_link_after_a_room_move_opens_the_teachers_view(app_url, browser):
    teacher, student = new_page(browser), new_page(browser)  # one context each: two sessions
    room_link = start_room(teacher, app_url)
    code = params(room_link)["room"][0]
    open_app(student, room_link, figures=False)
    open_menu_page(teacher, "Inside one head")
    student.wait_for_function("() => location.pathname === '/head'", timeout=FOLLOW_DEADLINE_MS)
    try:
        student.wait_for_selector(".js-plotly-plot:visible", timeout=FOLLOW_DEADLINE_MS)
    except PlaywrightTimeout as error:  # say what the student's page shows instead
        shown = student.evaluate("() => document.querySelector('[data-testid=stMain]').innerText.slice(0, 800)")
        raise AssertionError(f"no figure at {student.url}: {shown!r} {exceptions(student)}") from error
    url, figures, widgets = snapshot(student)
    assert params(url)["room"] == [code] and params(url)["task"] == ["en-fr"]
    parts = urlsplit(url)
    view_only = {key: values for key, values in params(url).items() if key != "room"}  # the view, not the room
    own_link = urlunsplit(parts._replace(query=urlencode(view_only, doseq=True)))
    assert_same_view(browser, "student after a room move", (own_link, figures, widgets))
