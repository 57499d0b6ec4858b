"""A room's students: join by code or link, follow the teacher's page and view, leave and rejoin.

The server pushes a room's new version to its students' sessions (rooms/push.py: it reruns them). Where it cannot
(another Streamlit) or must not (TVIZ_ROOM_PUSH=0), a student's session polls the store every POLL_SECONDS in a
fragment drawn first thing in the run, which reruns the app at a new version. The run sets the view fields to the
teacher's values at its start (dropping the ones the teacher has not set), after opening the teacher's page with
`st.switch_page` if it is another one (the run's end writes the view into the student's link).
A student's own changes last until the teacher's next change (said on screen); "Leave" stops following,
"Rejoin" catches up at once. The section says when the teacher has not been heard from for a while.
A session may try JOIN_TRIES short codes per JOIN_WINDOW seconds: the codes are short enough to guess.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import streamlit as st

from transformer_viz.app.frame.navigation import page
from transformer_viz.app.rooms.common import (
    forget_room_news,
    idle_minutes,
    notice,
    page_path,
    rate_allows,
    room_news,
    room_store,
    show_notice,
    store_answered,
    store_trouble,
)
from transformer_viz.app.rooms.limiter import CODE_GUESSES
from transformer_viz.app.rooms.push import (
    away_minutes,
    forget_this_session,
    needs_redraw,
    watch_this_session,
)
from transformer_viz.app.rooms.store import (
    CODE_LENGTH,
    LINK_CODE_LENGTH,
    RoomState,
    RoomStoreError,
    normalize_code,
)
from transformer_viz.app.rooms.teach import SHARED_FIELDS, lead_from_link, start_room, teacher_panel
from transformer_viz.app.server import state
from transformer_viz.app.server.state import Joined, checked_view
from transformer_viz.app.session.words import literal, tr

POLL_SECONDS = 0.5  # where the server cannot push: how often a student asks the store (~5 ms of server CPU each)
JOIN_TRIES, JOIN_WINDOW = 5, 60.0  # short codes a session may try per window (seconds)
MAX_TYPED = 200  # characters of the Join box: a code, or a pasted link


def may_try_a_code(say=notice) -> bool:
    """Whether this session may try another short code now (counted when it may); else `say` how long to wait."""
    now = time.monotonic()
    tries = [at for at in st.session_state.get(state.JOIN_TRIES, []) if now - at < JOIN_WINDOW]
    if len(tries) >= JOIN_TRIES:
        st.session_state[state.JOIN_TRIES] = tries
        say("room.too_many_tries", seconds=math.ceil(JOIN_WINDOW - (now - tries[0])))
        return False
    st.session_state[state.JOIN_TRIES] = [*tries, now]
    return rate_allows("guess", CODE_GUESSES)  # a fresh session every 5 tries: the browser's address counts too


def join_room(typed: str | None = None, say=notice) -> None:
    """Join the room whose short code was typed, or whose link code a link gave; `say` why not when there is none
    (a typed code: in the section, next to the form; a link: room_news, above the page)."""
    typed = st.session_state.get(state.ROOM_CODE, "") if typed is None else typed
    code = normalize_code(typed.rsplit(f"{state.ROOM}=", 1)[-1], (CODE_LENGTH, LINK_CODE_LENGTH))  # or a link
    if code is None:
        say("room.bad_code", length=CODE_LENGTH, typed=literal(typed[:20]))
        return
    short = code[:CODE_LENGTH]
    if len(code) == CODE_LENGTH and not may_try_a_code(say):
        return
    try:
        room = room_store().get(short)
    except RoomStoreError as error:
        store_trouble(error)
        return
    if room is None or (len(code) == LINK_CODE_LENGTH and not room.opens_for_student(code)):
        say("room.unknown", code=short, minutes=idle_minutes())
        return
    forget_room_news()
    try:
        room_store().mark_joined(short)  # a class's room now: a full store keeps it
    except RoomStoreError as error:
        store_trouble(error)
    st.session_state[state.JOINED] = Joined(short, short + room.key)
    st.query_params[state.ROOM] = short + room.key


def leave_room() -> None:
    joined = st.session_state.get(state.JOINED)
    if joined is not None:
        st.session_state[state.JOINED] = replace(joined, following=False)
    st.query_params.pop(state.ROOM, None)  # a rerun must not join again from the link


def rejoin_room() -> None:
    joined = st.session_state.get(state.JOINED)
    if joined is not None:
        st.session_state[state.JOINED] = Joined(joined.code, joined.link_code, student=joined.student)


def take_teachers_view(room: RoomState) -> None:
    """Set the view fields to the teacher's (before any widget: this run draws them)."""
    try:
        view = checked_view(room.view)
    except ValueError:  # not what a teacher's session shares: keep this view
        notice("room.bad_view")
        return
    if view.get(state.WEIGHTS) == "trained":  # the teacher's own training stays in the teacher's session
        view[state.WEIGHTS] = "pretrained"
        notice("room.trained")
    for field in SHARED_FIELDS:
        if field in view:
            st.session_state[field] = view[field]
        else:  # the teacher's widget shows its default: so will the student's
            st.session_state.pop(field, None)


def catch_up() -> None:
    """A following student, at the start of a full run (before any widget): take the teacher's view if it
    changed since last seen, in this very run; leave a room that has ended.

    On another page, the run first switches to the teacher's page and the view is taken at the start of that
    page's run. Never in a run that ends in a rerun: a poll folded into that rerun would bring the browser's
    old widget values, which win over values written before it."""
    joined = following()
    if joined is None:
        return
    try:
        room = room_store().get(joined.code)
    except RoomStoreError as error:  # keep following: the next poll asks again
        store_trouble(error)
        return
    store_answered()
    if room is None:
        st.session_state.pop(state.JOINED, None)
        st.query_params.pop(state.ROOM, None)
        room_news("room.ended", code=joined.code)
        return
    st.session_state[state.ROOM_LESSON] = room.lesson  # the answers the teacher revealed, the exit ticket
    if away_minutes(room) != joined.away:
        st.session_state[state.JOINED] = joined = replace(joined, away=away_minutes(room))
    if room.version in (0, joined.seen):
        return
    teachers_page = page_path(room.page)
    if teachers_page != page_path(st.session_state.get(state.PAGE, "")) and joined.switched != room.version:
        st.session_state[state.JOINED] = replace(joined, switched=room.version)  # once: no loop if it fails
        st.switch_page(page(teachers_page), query_params={state.ROOM: joined.link_code})
    st.session_state[state.JOINED] = replace(joined, seen=room.version)
    take_teachers_view(room)


def following() -> Joined | None:
    joined = st.session_state.get(state.JOINED)
    return joined if joined is not None and joined.following else None


def teacher_changed(joined: Joined) -> bool:
    """Whether the page must be drawn again (push.needs_redraw), as the store says now."""
    try:
        room, unreachable = room_store().get(joined.code), False
    except RoomStoreError:  # the next poll asks again
        room, unreachable = None, True
    return needs_redraw(room, unreachable, joined, bool(st.session_state.get(state.ROOM_DOWN)))


def enter_from_link() -> None:
    """A link with ?room=CODE joins that room (once: a student who left has the parameter removed)."""
    typed = st.query_params.get(state.ROOM)
    if typed is None or state.TEACHING in st.session_state:
        return
    joined = st.session_state.get(state.JOINED)
    if joined is not None and normalize_code(typed, (CODE_LENGTH, LINK_CODE_LENGTH)) in (joined.code, joined.link_code):
        return
    join_room(typed, say=room_news)
    if state.JOINED not in st.session_state:
        st.query_params.pop(state.ROOM, None)  # not a room: the news above the page says why


def room_params() -> dict[str, list[str]]:
    """What the address bar keeps of this session's room: the teacher's code, or a following student's link code."""
    teaching, joined = st.session_state.get(state.TEACHING), following()
    if teaching is not None:
        return {state.TEACH: [teaching.teacher_code]}
    return {state.ROOM: [joined.link_code]} if joined is not None else {}


def follow_room(url_path: str) -> None:
    """At the start of every full run, before any widget: note the page (what a teacher shares); a student
    enters a room named by the link and opens the teacher's page and view if they changed."""
    st.session_state[state.PAGE] = url_path
    lead_from_link()
    enter_from_link()
    catch_up()


def poll_teacher(section) -> None:
    """A following student's session, before anything else of the run: the server pushes its room's changes to it
    from now on (push.watch_this_session); where it cannot, its poll is drawn into `section`.

    No poll where the server pushes: each request a browser sends as one of its runs ends can make Streamlit
    drop the rest of that run (it starts a new ScriptRunner and ignores the old one's last events), and a
    student whose catch-up lost its end would show a half-drawn page until the teacher's next move. Where it
    polls, the poll's timer (an `auto_rerun` message) is drawn first, so that it reaches the browser long before
    the run ends: a timer drawn last could be lost that way, and the student would stop following for good."""
    joined = following()
    if joined is None:
        forget_this_session()
    elif not watch_this_session(room_store(), joined, bool(st.session_state.get(state.ROOM_DOWN))):
        with section:
            follow_teacher()


@st.fragment(run_every=POLL_SECONDS)
def follow_teacher() -> None:
    """A following student's poll: nothing to draw; a change reruns the whole app, whose start (catch_up) takes
    the teacher's view. The poll itself must not: it also runs inside a full run, after the view's widgets."""
    joined = following()
    if joined is None:
        return
    switched_page = joined.switched == joined.seen != joined.confirmed
    if switched_page and not st.session_state.get(state.FULL_RUN):
        # Once after a catch-up that opened another page, from the poll's own run: the teacher's page and view
        # taken again (seen=0). A poll that reaches the server as a run ends makes Streamlit drop what that run
        # had not sent yet: the new page's whole body, at worst (a page left blank until the teacher's next move).
        st.session_state[state.JOINED] = replace(joined, confirmed=joined.seen, seen=0, switched=0)
        st.rerun()
    if teacher_changed(joined):
        st.rerun()


# The section in the sidebar


def room_panel(section) -> None:
    """The sidebar's "Class room" section: start or end a room (teacher); join, leave or rejoin (student).

    Drawn into `section` (a container at the top of the sidebar) at the end of the run, after share_view:
    it shows what the room was just sent."""
    teaching = st.session_state.get(state.TEACHING)
    joined = st.session_state.get(state.JOINED)
    with section.expander(tr("room.title"), expanded=teaching is not None or joined is not None,
                          icon=":material/groups:"):
        show_notice()
        if teaching is not None:
            teacher_panel(teaching)
        elif joined is not None and joined.following:
            st.info(tr("room.following", code=joined.code), icon=":material/cast_for_education:")
            if joined.away:
                st.warning(tr("room.away", minutes=joined.away, idle=idle_minutes()))
            st.caption(tr("room.following_help"))
            st.button(tr("room.leave"), key=state.ROOM_LEAVE, on_click=leave_room, width="stretch")
        else:
            if joined is not None:
                st.caption(tr("room.left", code=joined.code))
                st.button(tr("room.rejoin", code=joined.code), key=state.ROOM_REJOIN, on_click=rejoin_room,
                          type="primary", width="stretch")
            join_form()
            st.button(tr("room.start"), key=state.ROOM_START, on_click=start_room, help=tr("room.start_help"),
                      width="stretch")


def join_form() -> None:
    with st.form(key=state.ROOM_FORM, border=False, enter_to_submit=True):
        code, join = st.columns([3, 2], vertical_alignment="bottom")
        code.text_input(tr("room.code"), key=state.ROOM_CODE, max_chars=MAX_TYPED, placeholder="K7QX")
        join.form_submit_button(tr("room.join"), key=state.ROOM_JOIN, on_click=join_room, width="stretch")
