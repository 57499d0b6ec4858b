"""A following student's session as Streamlit's frontend speaks it: the websocket protocol against a real server.

How a following student's session learns of the teacher's move (devtools/class_client.py plays the browser): the
server pushes it, and the student's browser sends nothing, so no request of the student's can reach the server as
one of its runs ends (Streamlit may then drop the rest of that run). Where the server does not push, the student's
poll: two races a browser test cannot stage on purpose, a poll that reaches the server as a run ends, and polls
carrying the page's old values while the student catches up.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from devtools.class_client import LiveSession, Session
from devtools.rooms import app_with_rooms
from devtools.servers import get_page

pytestmark = pytest.mark.slow

ROOM_LINK = re.compile(r"\?room=([A-Z0-9]+)")
DEADLINE = 120.0  # s: generous, for a busy machine


@dataclass
class Student(LiveSession):
    """A LiveSession that notes every message's kind and place, counts what it sends, and can answer the server's
    messages with polls made from the page it had before (what a browser sends until the new values arrived)."""

    messages: list = field(default_factory=list)  # (kind, delta path)
    sent: int = 0  # BackMsgs sent to the server
    stale_polls: list = field(default_factory=list)  # BackMsgs still to send, one per message received

    def _receive(self, msg: ForwardMsg) -> None:
        self.messages.append((msg.WhichOneof("type"), tuple(msg.metadata.delta_path)))
        if self.stale_polls and msg.WhichOneof("type") in ("new_session", "delta"):
            asyncio.get_running_loop().create_task(self._send(self.stale_polls.pop()))
        super()._receive(msg)

    async def _send(self, message) -> None:
        self.sent += 1
        await super()._send(message)


@pytest.fixture(scope="module")
def url():
    with app_with_rooms("memory") as (app_url, _redis):
        yield app_url


@pytest.fixture(scope="module")
def polling_url():
    """A server that does not push (TVIZ_ROOM_PUSH=0): its following students poll, as on a Streamlit without
    the internals rooms/push.py uses."""
    with app_with_rooms("memory", env={"TVIZ_ROOM_PUSH": "0"}) as (app_url, _redis):
        yield app_url


async def room(url: str) -> tuple[Session, str]:
    """A teacher's session on the lesson with a room started, and the room's link code."""
    links: list[str] = []

    def grab_link(kind, el, _fragment_id, _path):
        if kind == "code" and ROOM_LINK.search(el.code_text):
            links.append(ROOM_LINK.search(el.code_text)[1])

    teacher = Session(url, on_element=grab_link, timeout=DEADLINE)
    teacher.cookie = await asyncio.to_thread(get_page, url)
    await teacher.connect()
    await teacher.open("")
    await teacher.click("room_start")
    assert links, "no room link in the teacher's sidebar after Start"
    return teacher, links[-1]


async def student(url: str, link_code: str) -> Student:
    follower = Student(url, timeout=DEADLINE)
    follower.query = {"room": link_code}
    follower.cookie = await asyncio.to_thread(get_page, f"{url}/?room={link_code}")
    await follower.connect()
    await follower.open("")
    return follower


def shown_text(session: Session) -> str:
    return session.widget("src_text").state.string_value


async def until(condition, what: str) -> None:
    """Wait for `condition()` (checked at each of the student's messages), at most DEADLINE seconds."""
    async def check():
        while not condition():
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(check(), DEADLINE)
    except TimeoutError as error:
        raise AssertionError(f"not within {DEADLINE:g} s: {what}") from error


def test_the_server_pushes_the_teachers_move_and_the_students_browser_sends_nothing(url):
    """Each request a browser sends as one of its runs ends can make Streamlit drop the rest of that run: a
    following student's browser has no poll timer, and the teacher's move reaches it as a run the server starts."""
    from transformer_viz.app.rooms.push import PUSHES

    assert PUSHES, "this Streamlit lacks what rooms/push.py reruns a session with: following falls back to polls"

    async def lesson(url):
        teacher, link_code = await room(url)
        follower = await student(url, link_code)
        try:
            assert not follower._timers and "auto_rerun" not in {kind for kind, _path in follower.messages}
            sent = follower.sent
            await teacher.set_value("src_text", "banana")
            await until(lambda: follower.runs and follower.runs[-1].status == ForwardMsg.FINISHED_SUCCESSFULLY
                        and shown_text(follower) == "banana", "the teacher's input shown by a finished run")
            assert follower.sent == sent  # the student's browser asked for nothing
        finally:
            await follower.close()
            await teacher.close()

    asyncio.run(lesson(url))


def test_a_catch_up_to_another_page_takes_two_runs_and_no_more(url):
    """The run that finds the teacher on another page switches to it, and that page's run takes the view: the
    next move is the only thing that runs the student's page again (no poll, no confirmation run)."""

    async def lesson(url):
        teacher, link_code = await room(url)
        follower = await student(url, link_code)
        try:
            before = len(follower.runs)

            def full_runs_since_the_move() -> int:
                return sum(run.full for run in follower.runs[before:])

            await teacher.switch_page("attention")
            await until(lambda: follower.page_path == "attention" and follower._current is None, "the new page")
            await teacher.set_value("src_text", "banana")
            await until(lambda: shown_text(follower) == "banana" and follower._current is None, "the next move")
            assert full_runs_since_the_move() == 3  # switch, page, the next move
            assert all(run.full for run in follower.runs[before:])  # no poll
        finally:
            await follower.close()
            await teacher.close()

    asyncio.run(lesson(url))


# Where the server does not push: the student's poll


def test_a_following_students_poll_timer_is_sent_before_the_page(polling_url):
    """A poll that reaches the server as a run ends makes Streamlit drop that run's last messages: a poll timer
    sent last would be lost with them, and the student would stop following for good."""

    async def lesson(url):
        teacher, link_code = await room(url)
        follower = await student(url, link_code)
        try:
            kinds = follower.messages
            timer = next(i for i, (kind, _path) in enumerate(kinds) if kind == "auto_rerun")
            main_area = next(i for i, (kind, path) in enumerate(kinds) if kind == "delta" and path[:1] == (0,))
            assert timer < main_area, "the poll's timer came after the page's first element"
        finally:
            await follower.close()
            await teacher.close()

    asyncio.run(lesson(polling_url))


def test_polls_sent_with_the_old_page_while_a_student_catches_up_do_not_bring_the_old_view_back(polling_url):
    """Until the teacher's new values arrive, each poll carries the old ones. None of them may win over the
    teacher's values: the student ends up showing the teacher's input."""

    async def lesson(url):
        teacher, link_code = await room(url)
        follower = await student(url, link_code)
        try:
            poll_id = next(iter(follower._timers))
            follower.stop_timers()  # the polls are sent by hand here: a fixed number, old values
            stale = follower._client_state(fragment_id=poll_id)
            stale.rerun_script.is_auto_rerun = True
            assert shown_text(follower) != "banana"
            await teacher.set_value("src_text", "banana")
            follower.stale_polls = [stale] * 12
            await follower._run(stale)  # the poll that finds the change, and the catch-up it starts
            await until(lambda: not follower.stale_polls, "the old polls sent")
            done = len(follower.runs)
            fresh = follower._client_state(fragment_id=poll_id)  # the browser's next poll: what it shows now
            await follower._run(fresh)
            await until(lambda: len(follower.runs) > done and follower._current is None, "the runs settled")
            assert shown_text(follower) == "banana"
        finally:
            await follower.close()
            await teacher.close()

    asyncio.run(lesson(polling_url))


def test_after_a_catch_up_to_another_page_the_next_poll_draws_it_once_more_and_then_stops(polling_url):
    """A poll that reaches the server as the catch-up ends can make Streamlit drop the rest of it (the new page's
    whole body, at worst): after a page switch the page is drawn once more, from the poll's own run, and once."""

    async def lesson(url):
        teacher, link_code = await room(url)
        follower = await student(url, link_code)
        try:
            await until(lambda: follower._timers, "the poll's timer set")
            moved = len(follower.runs)
            await teacher.switch_page("attention")

            def full_runs_since_the_move() -> int:
                return sum(run.full for run in follower.runs[moved:])

            await until(lambda: full_runs_since_the_move() >= 1, "the catch-up")
            polls = sum(not run.full for run in follower.runs)
            await until(lambda: sum(not run.full for run in follower.runs) >= polls + 4, "four more polls")
            assert full_runs_since_the_move() == 3 and follower.page_path == "attention"  # switch, page, once more
        finally:
            await follower.close()
            await teacher.close()

    asyncio.run(lesson(polling_url))
