"""A class room while its Redis restarts (AppTest sessions, a real redis-server that keeps an append-only file,
as deploy/compose.yaml runs it): both sides are told above the page, no message names Redis's address, and the
room goes on when Redis is back."""

from __future__ import annotations

from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest
from test_rooms import APP

from devtools.browser import free_port
from devtools.redis_server import redis_missing_reason, redis_server
from transformer_viz.app.rooms import common, follow, teach
from transformer_viz.app.rooms.store import RedisRoomStore
from transformer_viz.app.server import state

pytestmark = pytest.mark.skipif(bool(redis_missing_reason()), reason=redis_missing_reason() or "")
DOWN = "The class room cannot be reached right now"


def session(link: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(link)
    return at.run()


def everything_said(at: AppTest) -> str:
    kinds = ("warning", "info", "error", "caption", "markdown", "code")
    return "\n".join(str(e.value) for kind in kinds for e in at.get(kind))


def said_above_the_page(at: AppTest) -> bool:
    return any(DOWN in w.value for w in at.main.warning)


def test_a_redis_restart_is_said_on_both_sides_without_its_address_and_the_room_goes_on(tmp_path, monkeypatch):
    port = free_port()
    with redis_server(port=port, data_dir=tmp_path) as url:
        store = RedisRoomStore.from_url(url)
        for module in (common, follow, teach):
            monkeypatch.setattr(module, "room_store", lambda: store)
        teacher = session({state.SRC_TEXT: "hello"})
        teacher.button(key=state.ROOM_START).click().run()
        code = teacher.session_state[state.TEACHING].code
        student = session({state.ROOM: code})
        assert student.session_state[state.SRC_TEXT] == "hello"
    # Redis is down: the teacher moves, the student's poll asks.
    teacher.sidebar.text_input(key=state.SRC_TEXT).input("during").run()
    student.run()
    for at in (teacher, student):
        assert not at.exception, [e.value for e in at.exception]
        assert said_above_the_page(at)
        assert "127.0.0.1" not in everything_said(at) and str(port) not in everything_said(at)
    with redis_server(port=port, data_dir=tmp_path):  # back, with the rooms it kept
        teacher.run()  # the teacher's next run (the page's 2 s safety net does the same) shares the move
        student.run()  # the student's next poll follows it
        assert student.session_state[state.SRC_TEXT] == "during"
        assert student.session_state[state.JOINED].following
        assert not said_above_the_page(teacher) and not said_above_the_page(student)
        assert teacher.session_state[state.TEACHING].code == code


@pytest.mark.parametrize("outage", ["a quick restart", "an outage longer than a room idles"])
def test_a_room_redis_lost_in_a_restart_is_not_said_to_have_heard_nothing_from_the_teacher(outage, monkeypatch):
    port = free_port()
    with redis_server(port=port) as url:  # no append-only file: a restart forgets the rooms
        store = RedisRoomStore.from_url(url)
        for module in (common, follow, teach):
            monkeypatch.setattr(module, "room_store", lambda: store)
        teacher = session({state.SRC_TEXT: "hello"})
        teacher.button(key=state.ROOM_START).click().run()
        code = teacher.session_state[state.TEACHING].code
    if outage == "an outage longer than a room idles":
        teacher.sidebar.text_input(key=state.SRC_TEXT).input("during").run()  # the teacher moves; Redis is away
        assert said_above_the_page(teacher)
        led = teacher.session_state[state.TEACHING]  # last heard before the outage, which lasted an hour
        teacher.session_state[state.TEACHING] = replace(led, heard=led.heard - 3600)
    with redis_server(port=port):  # back, without the room
        teacher.sidebar.text_input(key=state.SRC_TEXT).input("after").run()
    assert not teacher.exception and state.TEACHING not in teacher.session_state
    assert any(f"The class room {code} is gone: the room store lost it" in w.value for w in teacher.main.warning)
    assert "heard nothing from you" not in everything_said(teacher)
