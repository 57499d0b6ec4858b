"""A class room survives its teacher (a reload, another computer, a break) and keeps strangers out (AppTest)."""

import itertools
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from tests.test_rooms import session, sidebar_texts, store, teaching
from transformer_viz.app.rooms import follow, teach
from transformer_viz.app.rooms.store import CODE_LENGTH
from transformer_viz.app.server import state


def test_the_teachers_link_leads_the_room_again_after_a_reload_and_the_students_keep_following():
    teacher, code = teaching()
    teacher_code = teacher.session_state[state.TEACHING].teacher_code
    assert teacher.query_params[state.TEACH] == teacher_code  # the address bar keeps it: a reload finds it
    student = session({state.ROOM: teacher.session_state[state.TEACHING].link_code})
    reloaded = session({state.TEACH: teacher_code, state.SRC_TEXT: "hello"})  # F5, or the projector's computer
    assert not reloaded.exception
    assert reloaded.session_state[state.TEACHING].code == code and reloaded.button(key=state.ROOM_END)
    assert f"You lead room {code} again." in sidebar_texts(reloaded)
    reloaded.sidebar.text_input(key=state.SRC_TEXT).input("after the reload").run()
    student.run()
    assert student.session_state[state.SRC_TEXT] == "after the reload"


@pytest.mark.parametrize("which", ["a student's link code", "a made-up secret", "an ended room"])
def test_only_the_teachers_own_link_leads_the_room(which):
    teacher, code = teaching()
    codes = teacher.session_state[state.TEACHING]
    asked = {"a student's link code": codes.link_code + "ABCDEFGH", "a made-up secret": code + "A" * 20,
             "an ended room": codes.teacher_code}[which]
    if which == "an ended room":
        teacher.button(key=state.ROOM_END).click().run()
        assert state.TEACH not in teacher.query_params
    stranger = session({state.TEACH: asked})
    assert not stranger.exception and state.TEACHING not in stranger.session_state
    assert state.TEACH not in stranger.query_params
    assert said_above_the_title(stranger, "does not lead a room")


def said_above_the_title(at: AppTest, words: str) -> bool:
    """Whether a warning above the page's title says `words` (the sidebar may be folded, or hidden in presenter
    mode)."""
    above = itertools.takewhile(lambda element: element.type != "title", at.main)
    return any(element.type == "warning" and words in element.value for element in above)


def opened_to_no_room(how: str) -> tuple[AppTest, str]:
    """A session whose link opens no room (`how`), and what it must be told."""
    if how == "a wrong room link":
        return session({state.ROOM: "ZZZZ999999999999"}), "There is no room ZZZZ"
    if how == "a wrong teacher link":
        return session({state.TEACH: "ZZZZ" + "A" * 20}), "does not lead a room"
    teacher, code = teaching()
    student = session({state.ROOM: teacher.session_state[state.TEACHING].link_code})
    teacher.button(key=state.ROOM_END).click().run()
    student.run()  # the server pushes the end to the student
    return student, f"Room {code} has ended"


@pytest.mark.parametrize("how", ["a wrong room link", "a wrong teacher link", "the teacher ended the room"])
def test_a_link_to_no_room_or_an_ended_room_is_said_above_the_page_until_dismissed(how):
    at, said = opened_to_no_room(how)
    assert not at.exception and said_above_the_title(at, said)
    assert not any(said in w.value for w in at.sidebar.warning)  # said once: the section would say it folded
    at.run()
    assert said_above_the_title(at, said)
    at.button(key=state.ROOM_DISMISS).click().run()
    assert not any(said in w.value for w in at.warning)


@pytest.mark.parametrize("then", ["another page", "a room joined", "a room started", "the teacher's link"])
def test_the_news_above_the_page_goes_when_another_page_opens_or_a_room_is_joined_or_led(then):
    teacher, code = teaching()
    at, said = opened_to_no_room("a wrong room link")
    assert said_above_the_title(at, said)
    if then == "another page":
        at.session_state[state.GOTO] = "masks"  # as the lesson's "Open in the explorer" asks
        at.run()
    elif then == "a room joined":
        at.text_input(key=state.ROOM_CODE).input(code)
        at.button(key=state.ROOM_JOIN).click().run()
    elif then == "a room started":
        at.button(key=state.ROOM_START).click().run()
    else:
        at.query_params[state.TEACH] = teacher.session_state[state.TEACHING].teacher_code
        at.run()
    assert not at.exception and not any(said in w.value for w in at.warning)
    assert state.TEACHING in at.session_state or state.JOINED in at.session_state or then == "another page"


@pytest.mark.parametrize("in_the_old_tab", ["a change", "a heartbeat", "End room"])
def test_the_teachers_link_opened_elsewhere_takes_the_lead_and_the_old_tab_stops_leading(in_the_old_tab):
    laptop, code = teaching()
    codes = laptop.session_state[state.TEACHING]
    student = session({state.ROOM: codes.link_code})
    projector = session({state.TEACH: codes.teacher_code})  # the teacher's link, on the projector's computer
    projector.sidebar.text_input(key=state.SRC_TEXT).input("from the projector").run()
    if in_the_old_tab == "a change":
        laptop.sidebar.text_input(key=state.SRC_TEXT).input("from the laptop").run()
    elif in_the_old_tab == "a heartbeat":  # the laptop's tab, left open: its section beats every 30 s
        led = laptop.session_state[state.TEACHING]
        laptop.session_state[state.TEACHING] = replace(led, heard=led.heard - teach.HEARTBEAT_SECONDS)
        laptop.run()
    else:
        laptop.button(key=state.ROOM_END).click().run()
    assert not laptop.exception and state.TEACHING not in laptop.session_state
    assert state.TEACH not in laptop.query_params  # a reload does not take the lead back
    assert said_above_the_title(laptop, f"This room ({code}) is now led from another tab or device")
    student.run()
    assert student.session_state[state.SRC_TEXT] == "from the projector"
    projector.sidebar.text_input(key=state.SRC_TEXT).input("and on").run()
    student.run()
    assert student.session_state[state.SRC_TEXT] == "and on"


@pytest.mark.parametrize("heard", ["a moment ago", "longer ago than a room idles"])
def test_a_teacher_whose_room_is_gone_is_told_why(heard):
    teacher, code = teaching()
    store().end(code)  # the store no longer has it: Redis restarted without its rooms, or it idled away
    if heard == "longer ago than a room idles":  # the laptop slept
        led = teacher.session_state[state.TEACHING]
        teacher.session_state[state.TEACHING] = replace(led, heard=led.heard - teach.idle_minutes() * 60)
    teacher.sidebar.text_input(key=state.SRC_TEXT).input("after").run()
    assert not teacher.exception and state.TEACHING not in teacher.session_state
    lost, idle = f"The class room {code} is gone: the room store lost it", "heard nothing from you for 30 minutes"
    assert said_above_the_title(teacher, lost if heard == "a moment ago" else idle)
    assert not said_above_the_title(teacher, idle if heard == "a moment ago" else lost)


def test_a_student_link_carries_a_long_code_and_a_wrong_key_finds_no_room():
    teacher, code = teaching()
    link_code = teacher.session_state[state.TEACHING].link_code
    student = session({state.ROOM: link_code})
    assert student.session_state[state.JOINED].code == code and student.query_params[state.ROOM] == link_code
    guessed = session({state.ROOM: code + "2" * (len(link_code) - CODE_LENGTH)})
    assert state.JOINED not in guessed.session_state
    assert said_above_the_title(guessed, f"There is no room {code}")


def test_a_session_may_try_only_a_few_short_codes_a_minute():
    teacher, code = teaching()
    student = session()
    wrong = [c for c in ("ZZZZ", "YYYY", "XXXX", "WWWW", "VVVV") if c != code]
    for typed in wrong[:follow.JOIN_TRIES]:
        student.text_input(key=state.ROOM_CODE).input(typed)
        student.button(key=state.ROOM_JOIN).click().run()
    student.text_input(key=state.ROOM_CODE).input(code)  # the right code, one try too many
    student.button(key=state.ROOM_JOIN).click().run()
    assert state.JOINED not in student.session_state
    assert any("Too many room codes tried" in w.value for w in student.sidebar.warning)
    link_code = teacher.session_state[state.TEACHING].link_code
    student.text_input(key=state.ROOM_CODE).input(f"http://school.example/?room={link_code}")  # a pasted link:
    # its code is not a guess, so it still joins
    student.button(key=state.ROOM_JOIN).click().run()
    assert student.session_state[state.JOINED].code == code


def test_students_are_told_when_the_teacher_has_been_away(monkeypatch):
    teacher, _ = teaching()
    student = session({state.ROOM: teacher.session_state[state.TEACHING].link_code})
    assert "has not been here" not in sidebar_texts(student)
    now = follow.time.time()
    monkeypatch.setattr(follow.time, "time", lambda: now + 5 * 60)  # five minutes without a sign of the teacher
    student.run()
    assert "The teacher has not been here for 5 min." in sidebar_texts(student)
    monkeypatch.undo()
    teacher.sidebar.text_input(key=state.SRC_TEXT).input("back").run()  # the teacher is back
    student.run()
    assert "has not been here" not in sidebar_texts(student)


def test_in_presenter_mode_the_rooms_code_is_in_a_corner_button():
    teacher, code = teaching()
    teacher.session_state[state.PRESENT] = True
    teacher.run()
    badge = teacher.button(key=state.ROOM_SHOW)
    assert badge.label == f"Room {code}"
    student = session({state.ROOM: teacher.session_state[state.TEACHING].link_code, state.PRESENT: "true"})
    assert not [b for b in student.button if b.key == state.ROOM_SHOW]  # a student has no room to show
