"""A following student's session as Streamlit's frontend speaks it: the websocket protocol against a real server.

How a following student's session learns of the teacher's move (devtools/class_client.py plays the browser): the
server pushes it, and the student's browser sends nothing, so no request of the student's can reach the server as
one of its runs ends (Streamlit may then drop the rest of that run).
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
    """A LiveSession that notes every message's kind and place, and counts what it sends."""

    messages: list = field(default_factory=list)  # (kind, delta path)
    sent: int = 0  # BackMsgs sent to the server

    def _receive(self, msg: ForwardMsg) -> None:
        self.messages.append((msg.WhichOneof("type"), tuple(msg.metadata.delta_path)))
        super()._receive(msg)

    async def _send(self, message) -> None:
        self.sent += 1
        await super()._send(message)


@pytest.fixture(scope="module")
def url():
    with app_with_rooms("memory") as (app_url, _redis):
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
