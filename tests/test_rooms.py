"""Class rooms in Streamlit's AppTest: a teacher's session and students' sessions of the whole app, one store."""

from pathlib import Path

import pytest
from helpers import shown
from streamlit.testing.v1 import AppTest

from transformer_viz.app.rooms.common import base_url, page_path, qr_svg, room_link
from transformer_viz.app.server import state

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def session(link: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(link or {})
    return at.run()


def store():
    from transformer_viz.app.rooms.common import room_store

    return room_store()


def teaching() -> tuple[AppTest, str]:
    """A teacher's session that has started a room, and the room's code (on the home page, the lesson, with
    the input "hello" from its link: a link that chooses the view keeps the lesson from setting its own)."""
    teacher = session({state.SRC_TEXT: "hello"})
    teacher.session_state[state.SHAPE_OPEN] = True  # the sidebar's shape and variants: the heads are in it
    teacher.button(key=state.ROOM_START).click().run()
    assert not teacher.exception
    return teacher, teacher.session_state[state.TEACHING].code


def sidebar_texts(at: AppTest) -> str:
    return "\n".join(e.value for kind in ("info", "warning", "caption", "markdown") for e in at.sidebar.get(kind))


def test_a_started_room_shows_its_code_and_link_and_shares_the_page_and_view():
    teacher, code = teaching()
    link_code = teacher.session_state[state.TEACHING].link_code
    assert len(link_code) == 16 and link_code.startswith(code)  # a link no stranger guesses
    assert teacher.sidebar.code[0].value.endswith(f"/?room={link_code}")
    room = store().get(code)
    assert room.version == 1 and room.page == "lesson"
    assert room.view[state.TASK] == "reverse" and room.view[state.SRC_TEXT] == "hello"
    teacher.sidebar.selectbox(key=state.TASK).set_value("copy").run()  # a change: a new version
    room = store().get(code)
    assert room.version == 2 and room.view[state.TASK] == "copy"
    teacher.run()  # no change: no new version
    assert store().get(code).version == 2
    assert "Students see: Lesson (change 2)" in sidebar_texts(teacher)
    teacher.button(key=state.ROOM_END).click().run()
    assert store().get(code) is None and state.TEACHING not in teacher.session_state
    assert teacher.button(key=state.ROOM_START)  # may start another


def test_a_student_opening_the_rooms_link_gets_the_teachers_view_and_follows_each_change():
    teacher, code = teaching()
    teacher.sidebar.selectbox(key=state.TASK).set_value("sort").run()
    teacher.sidebar.text_input(key=state.SRC_TEXT).input("banana").run()
    student = session({state.ROOM: code})
    assert not student.exception
    assert (student.session_state[state.TASK], student.session_state[state.SRC_TEXT]) == ("sort", "banana")
    assert f"Following the teacher in room {code}." in sidebar_texts(student)
    assert "until the teacher's next change" in sidebar_texts(student)  # the rule for the student's own changes
    teacher.sidebar.text_input(key=state.SRC_TEXT).input("stressed").run()
    teacher.sidebar.selectbox(key=state.N_HEADS).set_value(2).run()
    student.run()  # what the poll does: the next run follows
    assert (student.session_state[state.SRC_TEXT], student.session_state[state.N_HEADS]) == ("stressed", 2)
    assert student.session_state[state.JOINED].seen == store().get(code).version


def test_a_students_own_change_lasts_until_the_teachers_next_change():
    teacher, code = teaching()
    student = session({state.ROOM: code})
    student.sidebar.text_input(key=state.SRC_TEXT).input("mine").run()
    student.run()
    assert student.session_state[state.SRC_TEXT] == "mine"  # the room did not change: the student's stays
    teacher.sidebar.selectbox(key=state.N_HEADS).set_value(8).run()
    student.run()
    assert (student.session_state[state.SRC_TEXT], student.session_state[state.N_HEADS]) == ("hello", 8)


def test_a_teachers_change_that_lands_while_a_students_page_is_drawn_is_followed_without_an_error(monkeypatch):
    """The teacher's second share of one move can land while the student's page is drawn: that run ends
    without an error and the student's next poll follows it."""
    from transformer_viz.app import main

    teacher, code = teaching()
    student = session({state.ROOM: code})
    rooms, late = store(), []
    original_panel = main.room_panel

    def room_panel(section):  # the end of the student's run: the page's widgets are drawn
        if not late:
            late.append(rooms.publish(code, "lesson", {**rooms.get(code).view, state.SRC_TEXT: "late"}))
        original_panel(section)

    teacher.sidebar.text_input(key=state.SRC_TEXT).input("first").run()
    monkeypatch.setattr(main, "room_panel", room_panel)
    student.run()
    assert not student.exception, [e.value for e in student.exception]
    assert student.session_state[state.SRC_TEXT] == "first"
    student.run()  # the next poll
    assert late and student.session_state[state.SRC_TEXT] == "late"
    assert student.session_state[state.JOINED].seen == late[0].version


def test_a_field_the_teacher_never_set_goes_back_to_its_default_for_the_student():
    teacher, code = teaching()
    student = session({state.ROOM: code})
    student.session_state[state.PAD] = 7  # the Masks page's padding: the teacher never opened that page
    student.run()
    teacher.sidebar.text_input(key=state.SRC_TEXT).input("abc").run()
    student.run()
    assert state.PAD not in teacher.session_state
    assert state.PAD not in student.session_state  # the Masks page will show its default, as the teacher's


def test_a_typed_code_joins_and_leave_and_rejoin_stop_and_restart_following():
    teacher, code = teaching()
    student = session()
    student.text_input(key=state.ROOM_CODE).input(f" {code.lower()} ")
    student.button(key=state.ROOM_JOIN).click().run()
    assert student.session_state[state.JOINED].following
    student.button(key=state.ROOM_LEAVE).click().run()
    assert not student.session_state[state.JOINED].following and state.ROOM not in student.query_params
    assert f"You left room {code}" in sidebar_texts(student)
    teacher.sidebar.text_input(key=state.SRC_TEXT).input("racecar").run()
    student.run()
    assert student.session_state[state.SRC_TEXT] == "hello"  # exploring: not following
    student.button(key=state.ROOM_REJOIN).click().run()
    assert student.session_state[state.SRC_TEXT] == "racecar"  # caught up at once
    assert student.session_state[state.JOINED].following


@pytest.mark.parametrize("typed, message", [
    ("K7Q", "A room code has 4 letters and digits"),
    ("**bold**", "A room code has 4 letters and digits"),
    ("ZZZZ", "There is no room ZZZZ"),
])
def test_a_wrong_code_is_explained(typed, message):
    student = session()
    student.text_input(key=state.ROOM_CODE).input(typed)
    student.button(key=state.ROOM_JOIN).click().run()
    assert not student.exception and state.JOINED not in student.session_state
    assert any(message in w.value for w in student.sidebar.warning), [w.value for w in student.sidebar.warning]
    linked = session({state.ROOM: typed})  # the same from a link, above the page; the parameter is then removed
    assert any(message in w.value for w in linked.main.warning)
    assert state.ROOM not in linked.query_params and state.JOINED not in linked.session_state


def test_when_the_teacher_ends_the_room_its_students_stop_following():
    teacher, code = teaching()
    student = session({state.ROOM: code})
    teacher.button(key=state.ROOM_END).click().run()
    student.run()
    assert state.JOINED not in student.session_state and state.ROOM not in student.query_params
    assert any(f"Room {code} has ended" in w.value for w in student.main.warning)


def test_a_teachers_trained_weights_are_not_asked_of_the_student():
    _, code = teaching()
    store().publish(code, "overview", {**store().get(code).view, state.WEIGHTS: "trained"})
    student = session({state.ROOM: code})
    assert not student.exception and student.session_state[state.WEIGHTS] == "pretrained"
    assert any("trained in the teacher's own session" in w.value for w in student.sidebar.warning)


@pytest.mark.parametrize("view", [{state.N_DECODER_LAYERS: 1_000_000}, {state.D_MODEL: "64"}, {"evil": 1},
                                  {state.LAYER: True}])
def test_a_shared_view_no_teacher_could_make_is_not_applied(view):
    _, code = teaching()
    store().publish(code, "attention", view)
    student = session({state.ROOM: code})
    assert not student.exception
    assert shown(student, state.N_DECODER_LAYERS) == 2 and "evil" not in student.session_state
    assert any("a view this app cannot show" in w.value for w in student.sidebar.warning)


def test_the_teachers_page_is_followed():
    _, code = teaching()
    store().publish(code, "masks", {state.PAD: 9})
    student = session({state.ROOM: code})
    assert not student.exception
    assert any(t.value == "Masks" for t in student.title), [t.value for t in student.title]
    assert student.session_state[state.PAD] == 9


def test_the_room_section_speaks_chinese():
    teacher, code = teaching()
    teacher.sidebar.radio(key=state.LANG).set_value("zh").run()
    assert "学生看到" in sidebar_texts(teacher)
    student = session({state.ROOM: code})
    assert student.session_state[state.LANG] == "en"  # each student reads in their own language
    assert f"Following the teacher in room {code}." in sidebar_texts(student)


@pytest.mark.parametrize("url, base", [
    ("http://127.0.0.1:8501", "http://127.0.0.1:8501"),
    ("http://127.0.0.1:8501/", "http://127.0.0.1:8501"),
    ("http://127.0.0.1:8501/attention", "http://127.0.0.1:8501"),
    ("https://school.example/tviz/masks", "https://school.example/tviz"),
    ("https://school.example/tviz/home?x=1#top", "https://school.example/tviz"),
    (None, ""),
])
def test_the_room_link_uses_the_address_the_browser_used(url, base):
    assert base_url(url) == base
    assert room_link(base, "K7QX") == f"{base}/?room=K7QX"


def test_a_link_that_only_works_on_the_server_is_pointed_out():
    from transformer_viz.app.rooms.common import names_this_computer

    assert names_this_computer("http://localhost:8501/?room=K7QX") and names_this_computer("http://127.0.0.1:8501")
    assert not names_this_computer("http://192.168.1.20:8501/?room=K7QX")
    assert not names_this_computer("https://tviz.school.example/?room=K7QX")


def test_page_paths_and_the_qr_code():
    assert [page_path(p) for p in ("", "home", "overview", "attention", "../etc")] == [
        "lesson", "lesson", "overview", "attention", "lesson"]
    svg = qr_svg("http://127.0.0.1:8501/?room=K7QX")
    assert svg.startswith("<svg") and "<path" in svg
