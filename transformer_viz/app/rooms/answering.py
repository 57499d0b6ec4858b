"""Answering the lesson's questions: alone, or as a room's class.

Alone, a student answers, reveals, and is told whether the model agrees. In a room every following student answers
on their own device (kept in the room's answers under their random number), the teacher's page shows how many
answered and the distribution, live, never who answered what; the teacher's Reveal is the room's: it is shared as
one of the room's lesson moments (`RoomState.lesson["revealed"]`), pushed to every follower like a view change,
and a follower cannot reveal before it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import streamlit as st

from transformer_viz.app.rooms.common import room_store, store_trouble
from transformer_viz.app.rooms.follow import following
from transformer_viz.app.rooms.store import RoomStoreError
from transformer_viz.app.rooms.teach import session_owner
from transformer_viz.app.server import figure_cache, state
from transformer_viz.app.session.charts import chart, figure_min_font
from transformer_viz.app.session.widgets import current_view
from transformer_viz.app.session.words import lang, tr
from transformer_viz.figures.answers import choice_bars, number_histogram, whole_answers
from transformer_viz.lessons.question import NUMBER, Question, distribution

CLASS_SECONDS = 1.0  # how often the teacher's page reads the class's answers
PERSONAL = (state.LANG, state.PRESENT)  # not part of what a question asks about


def question_key(question: Question) -> str:
    """The question's id in the room: the same for the teacher and every follower on the same step and view."""
    view = {f: v for f, v in asdict(current_view()).items() if f not in PERSONAL}
    return question.key(json.dumps(view, sort_keys=True, default=str))


def teaching():
    return st.session_state.get(state.TEACHING)


def note_asked(key: str, question: Question) -> None:
    """Keep the question (without its figures) for the exit ticket."""
    asked = st.session_state.setdefault(state.ASKED, {})
    asked.pop(key, None)
    asked[key] = replace(question, reveal=no_figures)


def no_figures(host) -> str:
    """A kept question's reveal: the exit ticket shows its truth alone."""
    return ""


def room_lesson() -> dict:
    """The lesson moments the teacher shared: the room's at a follower's last look, the teacher's own as last
    published ({} outside a room)."""
    in_a_room = teaching() is not None or following() is not None
    return st.session_state.get(state.ROOM_LESSON, {}) if in_a_room else {}


def shared_reveal(key: str) -> bool:
    return key in room_lesson().get("revealed", [])


def share_lesson(**moments) -> None:
    """The teacher: share the lesson's moments with the room (a new version, pushed to the followers)."""
    lead = teaching()
    lesson = {**room_lesson(), **moments}
    try:
        room = room_store().publish_lesson(lead.code, lesson, by=session_owner())
    except RoomStoreError as error:
        store_trouble(error)
        return
    if room is not None and room.led_by(session_owner()):  # else another tab leads: teach.py says so
        st.session_state[state.ROOM_LESSON] = lesson
        st.session_state[state.TEACHING] = replace(lead, version=room.version)


def reveal_for_room(key: str) -> None:
    """The teacher revealed this question: so does the room (once)."""
    if teaching() is not None and not shared_reveal(key):
        share_lesson(revealed=[*room_lesson().get("revealed", [])[-63:], key])


def my_answer(key: str) -> str | None:
    return st.session_state.get(state.MY_ANSWERS, {}).get(key)


def keep_answer(question: Question, key: str) -> None:
    """The answer widget changed: keep the answer; a following student's goes to the room too."""
    said = question.read(st.session_state.get(state.ANSWER.format(key)))
    st.session_state.setdefault(state.MY_ANSWERS, {})[key] = said
    joined = following()
    if said is None or joined is None:
        return
    try:
        room_store().answers.answer(joined.code, key, joined.student, said)
    except RoomStoreError as error:
        store_trouble(error)


def answer_box(where, question: Question, key: str, locked: bool) -> None:
    """One tap to answer: a pill per choice, or a number (locked once the answer is revealed)."""
    widget = state.ANSWER.format(key)
    if widget not in st.session_state and my_answer(key) is not None:
        st.session_state[widget] = float(my_answer(key)) if question.kind == NUMBER else my_answer(key)
    if question.kind == NUMBER:  # written as typed ("3", not "3.00"); a count steps by 1
        whole = whole_answers(question.low, question.high, question.tolerance)
        where.number_input(tr("answers.yours"), min_value=question.low, max_value=question.high, value=None,
                           step=question.tolerance or (1.0 if whole else None), format="%g", key=widget,
                           disabled=locked, placeholder="…", on_change=keep_answer, args=(question, key))
    else:
        labels = {c.id: c.label for c in question.choices}
        where.pills(tr("answers.yours"), list(labels), format_func=labels.get, key=widget, disabled=locked,
                    on_change=keep_answer, args=(question, key))


def verdict(question: Question, key: str) -> str:
    """What the student said against the model, once revealed ("" when they did not answer)."""
    said = my_answer(key)
    if said is None:
        return ""
    right = question.is_right(said)
    return tr("answers.right" if right else "answers.wrong", said=question.label_of(said),
              truth=question.truth_label())


def class_figure(question: Question, answers: list[str], revealed: bool):
    """The class's answers as a figure, its text large enough for this session (a projector in presenter mode).
    Built once for the class (figure_cache): the teacher's page redraws it every CLASS_SECONDS, and the Reveal reruns
    every follower at once, each drawing the same answers."""
    if question.kind == NUMBER:
        values = tuple(sorted(float(a) for a in answers if question.read(a) is not None))
        truth = float(question.truth) if revealed else None
        return figure_cache.figure(("class answers", values), list(values), number_histogram, question.low,
                                   question.high, truth, question.tolerance, min_font=figure_min_font(), lang=lang())
    counts = distribution(question, answers)
    return figure_cache.figure(("class answers", tuple(counts.items())), counts, choice_bars,
                               tuple(c.label for c in question.choices), question.truth if revealed else None,
                               min_font=figure_min_font(), lang=lang())


def class_answers(code: str, key: str) -> list[str]:
    try:
        return list(room_store().answers.answers(code, key).values())
    except RoomStoreError as error:
        store_trouble(error)
        return []


def every_class_answer() -> dict[str, dict[str, str]]:
    """Every answer of the teacher's room, by question."""
    try:
        return room_store().answers.every_answer(teaching().code)
    except RoomStoreError as error:
        store_trouble(error)
        return {}


def show_class(question: Question, key: str, revealed: bool, chart_key: str) -> None:
    """How many answered and what: bars or a histogram, the truth marked once revealed."""
    code = teaching().code if teaching() is not None else following().code
    answers = class_answers(code, key)
    st.caption(tr("answers.count_line", n=len(answers)))
    if answers:
        chart(class_figure(question, answers, revealed), key=chart_key)


@st.fragment(run_every=CLASS_SECONDS)
def live_class(question: Question, key: str, revealed: bool) -> None:
    """The teacher's page: the class's answers as they come."""
    if teaching() is not None:
        show_class(question, key, revealed, chart_key="class_answers")
