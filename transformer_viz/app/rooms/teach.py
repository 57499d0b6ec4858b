"""A room's teacher: start a room, share the page and view, stay alive, come back, end it.

The teacher's session publishes (page, view) to the room store whenever they changed: the page's URL path and
the values of the view fields its session set (what its link says, as values). It does so as soon as the
sidebar is drawn, again at the end of the run, and at the start of a page fragment's rerun; a fragment in the
room's section shares any change missed every SHARE_SECONDS and tells the store the teacher is still here
every HEARTBEAT_SECONDS. The teacher's address bar keeps the teacher code (`?teach=…`): a reload, or the same
link on the projector's computer, leads the room again. The session that opened it leads from then on (the
store's `leader`): the tab that led before stops at its next share, heartbeat or "End room", and says so.
"""

from __future__ import annotations

import html
import json
import secrets
import time
from dataclasses import asdict, replace

import streamlit as st

from transformer_viz.app.rooms.common import (
    app_url,
    forget_room_news,
    idle_minutes,
    names_this_computer,
    notice,
    page_path,
    qr_svg,
    rate_allows,
    room_link,
    room_news,
    room_store,
    store_answered,
    store_trouble,
    teacher_link,
)
from transformer_viz.app.rooms.limiter import ROOM_STARTS
from transformer_viz.app.rooms.store import (
    CODE_LENGTH,
    TEACHER_CODE_LENGTH,
    RoomState,
    RoomStoreError,
    normalize_code,
    view_json,
)
from transformer_viz.app.server import state
from transformer_viz.app.server.state import VIEW_FIELDS, Teaching, View
from transformer_viz.app.session.words import tr

SHARE_SECONDS = 2.0  # how often the teacher's session shares a change made outside a full run (a safety net)
HEARTBEAT_SECONDS = 30.0  # how often a teacher's open page tells the store the teacher is still here
VIEW_DEFAULTS = json.loads(view_json(asdict(View())))  # as a shared view says them (a tuple is a list)
CODE_STYLE = ("font:600 2.4rem/1.1 ui-monospace,Menlo,Consolas,monospace;letter-spacing:0.25em;"
              "text-align:center;padding:4px 0")
# What a student keeps their own: the language they read in, and presenter mode (the projector's, not theirs).
PERSONAL = (state.LANG, state.PRESENT)
SHARED_FIELDS = tuple(f for f in VIEW_FIELDS if f not in PERSONAL)


def session_owner() -> str:
    """This session's name for the store, which keeps one room per owner."""
    return st.session_state.setdefault(state.OWNER, secrets.token_hex(8))


def start_room() -> None:
    """Start a room led by this session (a room it led before ends)."""
    if not rate_allows("start", ROOM_STARTS):
        return
    try:
        new = room_store().create(session_owner())
    except RoomStoreError as error:
        store_trouble(error)
        return
    forget_room_news()
    st.session_state.pop(state.JOINED, None)
    st.query_params.pop(state.ROOM, None)
    st.session_state[state.TEACHING] = Teaching(new.code, new.link_code, new.teacher_code, heard=time.monotonic())
    st.query_params[state.TEACH] = new.teacher_code


def end_room() -> None:
    """End this session's room, unless another session leads it now: this tab's button was out of date, and the
    room goes on (a takeover between the store's answer and the end is not worth a script)."""
    teaching = st.session_state.pop(state.TEACHING, None)
    st.query_params.pop(state.TEACH, None)
    if teaching is None:
        return
    try:
        room = room_store().get(teaching.code)
        if room is None or room.led_by(session_owner()):
            room_store().end(teaching.code)
            return
    except RoomStoreError as error:  # the room expires by itself
        store_trouble(error)
        return
    room_news("room.led_elsewhere", code=teaching.code)


def take_the_lead(teacher_code: str) -> RoomState | None:
    """The room a teacher code opens, led by this session from now on (None: it opens no room)."""
    code = teacher_code[:CODE_LENGTH]
    room = room_store().get(code)
    if room is None or not room.opens_for_teacher(teacher_code):
        return None
    return room_store().lead(code, session_owner())


def lead_from_link() -> None:
    """A link with ?teach=CODE leads that room again (the teacher reloaded, or opened it on another computer)."""
    typed = st.query_params.get(state.TEACH)
    teaching = st.session_state.get(state.TEACHING)
    if typed is None or (teaching is not None and teaching.teacher_code == typed):
        return
    teacher_code = normalize_code(typed, (TEACHER_CODE_LENGTH,))
    try:
        room = None if teacher_code is None else take_the_lead(teacher_code)
    except RoomStoreError as error:
        store_trouble(error)
        return
    if room is None:
        st.query_params.pop(state.TEACH, None)
        room_news("room.bad_teacher_link", minutes=idle_minutes())
        return
    code = teacher_code[:CODE_LENGTH]
    forget_room_news()
    st.session_state.pop(state.JOINED, None)
    st.session_state[state.TEACHING] = Teaching(code, code + room.key, teacher_code, room.page, room.view,
                                                room.version, time.monotonic())
    notice("room.led_again", level="info", code=code)


def not_default(view: dict[str, object]) -> dict[str, object]:
    """The fields of a (JSON-read) view whose value is not the View's default."""
    return {field: value for field, value in view.items() if value != VIEW_DEFAULTS.get(field)}


def session_view() -> dict[str, object]:
    """The values of the shared view fields this session has set (a field never set: its widget's default)."""
    return {field: st.session_state[field] for field in SHARED_FIELDS if field in st.session_state}


def idled_away(teaching: Teaching, store_was_down: bool) -> bool:
    """Whether a room the store no longer has expired by idleness: the teacher was last heard longer ago than a room
    lives without a sign, while the store answered. Else the store lost it (a Redis restarted without its rooms, or
    one that was away while the room's time ran out) or it was ended from another tab or device."""
    return not store_was_down and time.monotonic() - teaching.heard >= idle_minutes() * 60


def still_leading(teaching: Teaching, room: RoomState | None, store_was_down: bool) -> bool:
    """Whether this session still leads the room, as the store's answer (`room`) says. If not, it stops leading
    and says why above the page: another session leads the room, or the room is gone (idled_away tells why;
    `store_was_down`: the store had not answered before this answer)."""
    if room is not None and room.led_by(session_owner()):
        return True
    st.session_state.pop(state.TEACHING, None)
    st.query_params.pop(state.TEACH, None)  # else the next run would take the lead back from the link
    if room is not None:
        room_news("room.led_elsewhere", code=teaching.code)
    elif idled_away(teaching, store_was_down):
        room_news("room.expired", code=teaching.code, minutes=idle_minutes())
    else:
        room_news("room.lost", code=teaching.code)
    return False


def share_view() -> None:
    """The teacher's session: publish the page and view if they changed since the last time (else nothing).

    app.py calls it after the sidebar and after the page; a page fragment whose widgets are view fields calls
    it first thing (keep_sharing catches, within SHARE_SECONDS, a change made anywhere else). A field that
    appears with its default value (a widget drawn for the first time) is no change: the students' widget
    shows that default already, and a new version would redraw every student's page for nothing.
    """
    teaching = st.session_state.get(state.TEACHING)
    if teaching is None:
        return
    shared_page = page_path(st.session_state.get(state.PAGE, ""))
    try:
        view = json.loads(view_json(session_view()))  # as the students will read it: comparable with the last
    except ValueError:
        notice("room.too_large")
        return
    if teaching.version and (shared_page, not_default(view)) == (teaching.page, not_default(teaching.view)):
        return
    try:
        room = room_store().publish(teaching.code, shared_page, view, by=session_owner())
    except ValueError:
        notice("room.too_large")
        return
    except RoomStoreError as error:
        store_trouble(error)
        return
    if still_leading(teaching, room, store_was_down=store_answered()):
        st.session_state[state.TEACHING] = replace(teaching, page=shared_page, view=view, version=room.version,
                                                   heard=time.monotonic())


def stay_alive() -> None:
    """Tell the store, every HEARTBEAT_SECONDS, that the teacher's page is open (the room's idle time restarts)."""
    teaching = st.session_state.get(state.TEACHING)
    if teaching is None:
        return
    unanswered = st.session_state.get(state.ROOM_DOWN)  # the store did not answer: ask at every tick until it does
    if not unanswered and time.monotonic() - teaching.heard < HEARTBEAT_SECONDS:
        return
    try:
        room = room_store().heartbeat(teaching.code, by=session_owner())
    except RoomStoreError as error:  # the next beat tries again
        store_trouble(error)
        return
    if still_leading(teaching, room, store_was_down=store_answered()):
        st.session_state[state.TEACHING] = replace(teaching, heard=time.monotonic())


@st.fragment(run_every=SHARE_SECONDS)
def keep_sharing() -> None:
    """Every SHARE_SECONDS: share a change no run shared (a page fragment that does not call share_view), say the
    teacher is here, and show what the students see."""
    was_down = bool(st.session_state.get(state.ROOM_DOWN))
    share_view()
    stay_alive()
    teaching = st.session_state.get(state.TEACHING)
    if teaching is None or was_down != bool(st.session_state.get(state.ROOM_DOWN)):
        st.rerun()  # the room expired or is led elsewhere, or the store stopped or started answering: redraw
    if teaching.version:
        st.caption(tr("room.shared", page=tr(f"nav.{teaching.page}"), version=teaching.version))


def room_code_card(teaching: Teaching, qr_width: int = 180) -> None:
    """The room's code, QR code and link, as students need them to join."""
    link = room_link(app_url(), teaching.link_code)
    st.caption(tr("room.code_is"))
    st.html(f'<div style="{CODE_STYLE}">{html.escape(teaching.code)}</div>')
    if link.startswith("http"):
        st.image(qr_svg(link), caption=tr("room.qr"), width=qr_width)
    st.code(link, language=None, wrap_lines=True)
    if names_this_computer(link):
        st.caption(tr("room.local_link"))


def teacher_panel(teaching: Teaching) -> None:
    room_code_card(teaching)
    st.caption(tr("room.teacher_help"))
    keep_sharing()
    with st.popover(tr("room.teacher_link"), icon=":material/key:", width="stretch"):
        st.caption(tr("room.teacher_link_help", minutes=idle_minutes()))
        st.code(teacher_link(app_url(), teaching.teacher_code), language=None, wrap_lines=True)
    st.button(tr("room.end"), key=state.ROOM_END, on_click=end_room, width="stretch")


# Above the title, at the top left of the page (the way out of presenter mode is at its top right); it scrolls
# away with the page, so it never covers the lesson's sticky Previous / Next.
BADGE_STYLE = (f"<style>.st-key-{state.ROOM_SHOW}{{position:absolute;top:6px;left:1.5rem;z-index:1000010;"
               f"width:auto !important}} .st-key-{state.ROOM_SHOW} button{{min-height:30px !important;height:30px;"
               "padding:0 10px;font-size:15px}</style>")


def room_badge() -> None:
    """In presenter mode the sidebar is hidden: the room's code in a corner, which opens the code and QR code
    for latecomers."""
    teaching = st.session_state.get(state.TEACHING)
    if teaching is None or not st.session_state.get(state.PRESENT):
        return
    st.html(BADGE_STYLE)
    if st.button(tr("room.badge", code=teaching.code), key=state.ROOM_SHOW, icon=":material/qr_code_2:",
                 help=tr("room.badge_help")):
        st.dialog(tr("room.title"), width="large")(room_code_card)(teaching, qr_width=320)
