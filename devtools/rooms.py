"""A class room in a real Chromium, shared by tests/test_rooms_browser.py and bench/bench_rooms.py: the app with its
rooms in the server's process or in a real redis-server, a teacher starting a room, and what a student's page shows
after a teacher's move."""

from __future__ import annotations

import contextlib

from devtools.browser import choose_option, exceptions, finished_runs, open_app, streamlit_server, wait_for_idle
from devtools.redis_server import redis_missing_reason, redis_server

# When the teacher's last input happened, and when the student's page first showed a condition, in the same
# clock (ms since the epoch): both pages run in one browser on one machine.
INPUT_AT = "() => performance.timeOrigin + window.__tvInputAt"
MAIN_LAYER = "document.querySelector('[data-testid=stMain] input[aria-label=\"{label}\"]')?.value"
SOURCE = "document.querySelector('[data-testid=stSidebar] input[aria-label=\"{label}\"]')?.value"
HEADING = "document.querySelector('h1')?.innerText.trim()"
FULL_ERRORS = ("--client.showErrorDetails", "full")  # a failure here shows its traceback (the app's config hides it)
FOLLOW_DEADLINE_MS = 60_000  # how long a student's page may take to show a move before a test fails: generous


@contextlib.contextmanager
def app_with_rooms(store: str, env: dict[str, str] | None = None):
    """The app's URL, and the Redis URL its rooms live in (None: in the server's process); `env`: more of the
    server's environment. RuntimeError when `store` is "redis" and redis-server is missing."""
    if store == "memory":
        with streamlit_server(extra_args=FULL_ERRORS, env=env) as url:
            yield url, None
        return
    reason = redis_missing_reason()
    if reason:
        raise RuntimeError(reason)
    with redis_server() as redis_url, streamlit_server(
            extra_args=FULL_ERRORS, env={**(env or {}), "TVIZ_REDIS_URL": redis_url}) as url:
        yield url, redis_url


def start_room(teacher, url: str) -> str:
    """Open the app as the teacher, start a room; the room's link as shown."""
    open_app(teacher, url)
    return press_start_room(teacher)


def press_start_room(teacher) -> str:
    """On the teacher's page (opened and settled): open the sidebar's Class room, press Start; the room's link."""
    sidebar = teacher.get_by_test_id("stSidebar")
    sidebar.get_by_text("Class room").click()
    link = teacher.get_by_test_id("stCode").first
    start = sidebar.get_by_role("button", name="Start a room (teacher)")
    wait_for_idle(teacher)
    runs, sent = finished_runs(teacher), teacher.evaluate("() => window.__tvSent")
    enabled = start.is_enabled()
    start.click()
    try:
        link.wait_for(timeout=FOLLOW_DEADLINE_MS)
    except Exception as error:  # say what the page showed instead: the click's trace, if any
        raise AssertionError(f"no room link after Start (enabled before the click: {enabled}): "
                             f"{finished_runs(teacher) - runs} runs since the click, "
                             f"{teacher.evaluate('() => window.__tvSent') - sent} messages sent to the server; "
                             f"exceptions {exceptions(teacher)}; room section: "
                             f"{sidebar.get_by_test_id('stExpander').first.inner_text()!r}") from error
    wait_for_idle(teacher)
    return link.inner_text().strip()


def follow_seconds(teacher, student, action, shown: str) -> float:
    """Do `action` on the teacher's page and wait (at most FOLLOW_DEADLINE_MS) until the student's page shows it
    (`shown`, a JavaScript condition); -> the seconds from the teacher's last input until then."""
    wait_for_idle(teacher)
    wait_for_idle(student)  # both pages have drawn the last move
    student.evaluate("() => { window.__shownAt = null; }")
    action()
    student.wait_for_function(f"""() => {{
        if (!({shown})) return false;
        window.__shownAt = window.__shownAt || performance.timeOrigin + performance.now();
        return true;
    }}""", timeout=FOLLOW_DEADLINE_MS, polling=20)
    seconds = (student.evaluate("() => window.__shownAt") - teacher.evaluate(INPUT_AT)) / 1000
    wait_for_idle(teacher)
    wait_for_idle(student)
    assert exceptions(teacher) == [] and exceptions(student) == []
    return seconds


def teacher_moves(teacher):
    """The teacher's moves of a lesson, three rounds of (kind, action, what the student's page then shows)."""
    sidebar = teacher.get_by_test_id("stSidebar")
    layer = teacher.get_by_test_id("stSelectbox").filter(
        has=teacher.get_by_test_id("stWidgetLabel").filter(has_text="Layer"))

    def go_to(page_name: str):
        return lambda: sidebar.get_by_role("link", name=page_name, exact=True).click()

    def choose_layer(option: str):
        return lambda: choose_option(teacher, layer, option)

    def type_source(text: str):
        def typing():
            box = sidebar.get_by_label("Source text")
            box.fill(text)
            box.press("Enter")
        return typing

    for chosen_layer, text in [("1", "banana"), ("2", "stressed"), ("1", "racecar")]:
        yield None, go_to("Overview"), f"{HEADING}.startsWith('Overview')"
        yield "page", go_to("Attention"), f"location.pathname === '/attention' && {HEADING} === 'Attention'"
        yield "layer", choose_layer(chosen_layer), f"{MAIN_LAYER.format(label='Layer')} === '{chosen_layer}'"
        yield "input", type_source(text), f"{SOURCE.format(label='Source text')} === '{text}'"
