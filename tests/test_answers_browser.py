"""The class answers in a real Chromium: a teacher and two students (phones), each in their own browser context, on
one server; once with rooms in the server's process, once in a real redis-server.

Step 5 (a number): each student's page has the answer box and no "Reveal the answer"; the students answer (one
right, one wrong), the teacher's page counts them, the teacher reveals, and each student's page says whether they
were right, with the answer and the class's spread. Step 6 (a choice of head): the students answer with a tap. Step
12: the exit ticket asks steps 5 and 6 again; one student answers, the teacher's page counts it, the teacher reveals
the ticket and the student's page shows the model's answer. Every wait is for what the page shows, with a generous
deadline (how fast: bench/bench_answers.py).
"""

import json
import os
import re
from pathlib import Path

import pytest

from devtools.browser import chromium, exceptions, new_page, open_app, rerun_after, wait_for_idle
from devtools.redis_server import redis_missing_reason
from devtools.rooms import FOLLOW_DEADLINE_MS, app_with_rooms, start_room

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # browser: skipped, saying why, without Chromium

MASKS, HEADS, LAST = 5, 6, 12  # steps: a number question (3 on the default model), a choice of head, the ticket
PHONE = {"width": 390, "height": 844}
ANSWER = "[data-testid=stMain] [class*='st-key-answer_{}']"  # the answer box of a question key's beginning
TICKET_ANSWER = ANSWER.format(f"exit-{MASKS}-")
STEP_BUTTON = "[data-testid=stMain] .st-key-lesson_step button"  # the step chooser's


def drawn(selector: str) -> str:
    """A JavaScript condition: an element matching the CSS `selector` is on the page."""
    return f"document.querySelector({json.dumps(selector)}) !== null"


@pytest.fixture
def screenshots(tmp_path) -> Path:
    folder = Path(os.environ.get("TV_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shows(*texts: str) -> str:
    """A JavaScript condition: the page's main area shows every one of `texts`."""
    return " && ".join(f"document.querySelector('[data-testid=stMain]')?.innerText.includes({json.dumps(t)})"
                       for t in texts)


def wait_until(page, condition: str, what: str) -> None:
    """Wait (at most FOLLOW_DEADLINE_MS) until `condition` holds on the page, then for the page to settle; fail
    saying what the page's main area showed instead."""
    try:
        page.wait_for_function(f"() => {condition}", timeout=FOLLOW_DEADLINE_MS, polling=100)
    except Exception as error:
        main = page.evaluate("() => document.querySelector('[data-testid=stMain]')?.innerText")
        raise AssertionError(f"{what}: not shown within {FOLLOW_DEADLINE_MS / 1000:.0f} s; exceptions "
                             f"{exceptions(page)}; the page showed:\n{main}") from error
    wait_for_idle(page)


def on_step(number: int) -> str:
    return f"location.search.includes('lesson_step={number}') && {shows(f'{number} of {LAST}:')}"


def type_number(page, box: str, said: str) -> None:
    """Type a number into an answer box and press Enter, as a student does; wait for the rerun it sends."""
    field = page.locator(f"{box} input")
    field.scroll_into_view_if_needed()

    def typing():
        field.fill(said)
        field.press("Enter")

    rerun_after(page, typing, until=f"document.querySelector({json.dumps(box + ' input')}).value === '{said}'")


def tap(page, box: str, label: str) -> None:
    """Tap one of an answer box's pills (a button, whatever role the installed Streamlit gives it)."""
    pill = page.locator(f"{box} button").filter(has_text=re.compile(f"^{re.escape(label)}$"))
    pill.scroll_into_view_if_needed()
    rerun_after(page, pill.click)


def no_exceptions(*pages) -> None:
    for page in pages:
        assert exceptions(page) == [], (page.url, exceptions(page))


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_the_class_answers_the_teacher_sees_the_count_and_reveals_and_the_exit_ticket(store, screenshots):
    if store == "redis" and redis_missing_reason():
        pytest.skip(redis_missing_reason())
    with app_with_rooms(store) as (url, _), chromium() as browser:
        teacher = new_page(browser)
        link = start_room(teacher, f"{url}/?lesson_step={MASKS}")
        students = [new_page(browser, **PHONE), new_page(browser, **PHONE)]  # each in its own browser context
        for student in students:
            open_app(student, link)
            wait_until(student, f"{on_step(MASKS)} && {drawn(ANSWER.format(''))}",
                       "a student's step 5 with its answer box")
            assert student.get_by_text("Answer on your device", exact=False).count() == 1
            assert student.get_by_text("Reveal the answer", exact=True).count() == 0, "a follower cannot reveal"
        assert teacher.locator(ANSWER.format("")).count() == 0, "the teacher's screen shows the class, not a box"

        # Step 5: one right, one wrong; the teacher's page counts them; the teacher's Reveal is the room's.
        right, wrong = students
        for student, said in ((right, "3"), (wrong, "5")):
            type_number(student, ANSWER.format(f"{MASKS}-"), said)
        wait_until(teacher, f"{shows('2 answered so far.')} && {drawn('.st-key-class_answers svg')}",
                   "the teacher's count of two answers")
        teacher.screenshot(path=str(screenshots / f"answers_teacher_{store}.png"))
        rerun_after(teacher, lambda: teacher.get_by_text("Reveal the answer", exact=True).click())
        for student, verdict in ((right, "You said 3; the model says 3: right."),
                                 (wrong, "You said 5; the model says 3.")):
            wait_until(student, f"{shows(verdict, '3 cells')} && {drawn('.st-key-class_answers_revealed svg')}",
                       f"a student's verdict {verdict!r}, the answer and the class's spread")
        assert "model says 3: right" not in wrong.locator("[data-testid=stMain]").inner_text()
        wrong.screenshot(path=str(screenshots / f"answers_student_revealed_{store}.png"))
        no_exceptions(teacher, *students)

        # Step 6: a choice of head, one tap each.
        rerun_after(teacher, lambda: teacher.get_by_role("button", name="Next").click(), until=on_step(HEADS))
        for student, said in zip(students, ("Head 1", "Head 2"), strict=True):
            wait_until(student, f"{on_step(HEADS)} && {drawn(ANSWER.format(f'{HEADS}-') + ' button')}",
                       "a student's step 6 with its pills")
            tap(student, ANSWER.format(f"{HEADS}-"), said)
        wait_until(teacher, f"{on_step(HEADS)} && " + shows("2 answered so far."), "the teacher's count on step 6")

        # Step 12: the exit ticket asks steps 5 and 6 again.
        last = teacher.locator(STEP_BUTTON).filter(has_text=re.compile(f"^{LAST}$"))
        rerun_after(teacher, last.click, until=on_step(LAST))
        wait_until(teacher, shows("Exit ticket", "0 answered · – right"), "the teacher's exit ticket")
        for student in students:
            wait_until(student, f"{on_step(LAST)} && {shows('Exit ticket')} && {drawn(TICKET_ANSWER + ' input')}",
                       "a student's exit ticket")
        type_number(right, TICKET_ANSWER, "3")
        wait_until(teacher, shows("1 answered · 100% right"), "the teacher's count of the ticket's answer")
        reveal = teacher.get_by_test_id("stMain").get_by_text("Reveal the ticket's answers", exact=True)
        rerun_after(teacher, reveal.click)
        wait_until(right, shows("The model's answer: 3.", "You said 3; the model says 3: right."),
                   "the ticket's answer on the student's page")
        right.screenshot(path=str(screenshots / f"answers_ticket_student_{store}.png"))
        assert wrong.locator(f"{TICKET_ANSWER} input").input_value() == "", "the other student did not answer"
        no_exceptions(teacher, *students)
