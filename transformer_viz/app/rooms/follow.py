"""Class rooms: a teacher shares the page and view; students who open the room's link follow them.

The teacher's session publishes (page, view) to the room store whenever they changed: the page's URL path
and the values of the view fields its session set (what its link says, as values). It does so as soon as
the sidebar is drawn, again at the end of the run, and at the start of a page fragment's rerun.
A student's session polls the store every POLL_SECONDS in a fragment; at a new version it reruns the app,
whose start sets the view fields to the teacher's values (dropping the ones the teacher has not set) and, for
another page, opens it with `st.switch_page` (the run's end writes the view into the student's link).
A student's own changes last until the teacher's next change (said on screen); "Leave" stops following,
"Rejoin" catches up at once.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import asdict, replace
from urllib.parse import urlsplit

import segno
import streamlit as st

from transformer_viz.app.frame.navigation import HOME, PAGES, page
from transformer_viz.app.rooms.store import (
    CODE_LENGTH,
    ROOM_TTL,
    RoomState,
    RoomStore,
    RoomStoreError,
    normalize_code,
    open_store,
    view_json,
)
from transformer_viz.app.session import state
from transformer_viz.app.session.state import VIEW_FIELDS, Joined, Teaching, View, checked_view
from transformer_viz.app.session.widgets import literal, tr

POLL_SECONDS = 0.5  # how often a following student asks the store for a change (~6 ms of server CPU each)
SHARE_SECONDS = 2.0  # how often the teacher's session shares a change made outside a full run (a safety net)
HOURS = ROOM_TTL // 3600
VIEW_DEFAULTS = json.loads(view_json(asdict(View())))  # as a shared view says them (a tuple is a list)
CODE_STYLE = ("font:600 2.4rem/1.1 ui-monospace,Menlo,Consolas,monospace;letter-spacing:0.25em;"
              "text-align:center;padding:4px 0")


@st.cache_resource(show_spinner=False)
def room_store() -> RoomStore:
    """The rooms of this server: in this process, or in Redis when TVIZ_REDIS_URL is set."""
    return open_store(os.environ)


def notice(key: str, **values) -> None:
    """A message about the room for the next time the room's section is drawn."""
    st.session_state[state.ROOM_NOTICE] = (key, values)


def page_path(url_path: str) -> str:
    """The app page a shared URL path names ("" and "home" are the home page; anything else unknown too)."""
    return url_path if url_path in PAGES else HOME


def base_url(url: str | None) -> str:
    """The app's address without the page's path ("http://host:8501/attention" -> "http://host:8501")."""
    if not url:
        return ""
    url = url.split("?")[0].split("#")[0].rstrip("/")
    for path in [*PAGES, "home"]:
        if url.endswith(f"/{path}"):
            return url.removesuffix(f"/{path}")
    return url


def app_url() -> str:
    """The app's address as this browser reached it (scheme, host, port and any base path)."""
    url = base_url(st.context.url)
    if url:
        return url
    headers = st.context.headers
    host = headers.get("Host") if headers else None
    return f"{headers.get('X-Forwarded-Proto', 'http')}://{host}" if host else ""


def names_this_computer(url: str) -> bool:
    """Whether a link only works on the server's own computer (a student's phone cannot open it)."""
    return urlsplit(url).hostname in ("localhost", "127.0.0.1", "::1")


def room_link(base: str, code: str) -> str:
    return f"{base}/?{state.ROOM}={code}"


def qr_svg(link: str) -> str:
    """The link as a QR code (an SVG document), dark on white so a phone reads it off a projector."""
    return segno.make(link, error="m").svg_inline(scale=4, border=2, dark="#111", light="#fff")


# The teacher


def start_room() -> None:
    try:
        code = room_store().create()
    except RoomStoreError as error:
        notice("room.unavailable", message=str(error))
        return
    st.session_state.pop(state.JOINED, None)
    st.session_state[state.TEACHING] = Teaching(code)


def end_room() -> None:
    teaching = st.session_state.pop(state.TEACHING, None)
    if teaching is not None:
        try:
            room_store().end(teaching.code)
        except RoomStoreError as error:  # the room expires by itself
            notice("room.unavailable", message=str(error))


def not_default(view: dict[str, object]) -> dict[str, object]:
    """The fields of a (JSON-read) view whose value is not the View's default."""
    return {field: value for field, value in view.items() if value != VIEW_DEFAULTS.get(field)}


# What a student keeps their own: the language they read in, and presenter mode (the projector's, not theirs).
PERSONAL = (state.LANG, state.PRESENT)
SHARED_FIELDS = tuple(f for f in VIEW_FIELDS if f not in PERSONAL)


def session_view() -> dict[str, object]:
    """The values of the shared view fields this session has set (a field never set: its widget's default)."""
    return {field: st.session_state[field] for field in SHARED_FIELDS if field in st.session_state}


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
        room = room_store().publish(teaching.code, shared_page, view)
    except ValueError:
        notice("room.too_large")
        return
    except RoomStoreError as error:
        notice("room.unavailable", message=str(error))
        return
    if room is None:
        st.session_state.pop(state.TEACHING, None)
        notice("room.expired", code=teaching.code, hours=HOURS)
        return
    st.session_state[state.TEACHING] = Teaching(teaching.code, shared_page, view, room.version)


@st.fragment(run_every=SHARE_SECONDS)
def keep_sharing() -> None:
    """Every SHARE_SECONDS: share a change no run shared (a page fragment that does not call share_view), and
    show what the students see."""
    share_view()
    teaching = st.session_state.get(state.TEACHING)
    if teaching is None:
        st.rerun()  # the room expired: redraw the section
    if teaching.version:
        st.caption(tr("room.shared", page=tr(f"nav.{teaching.page}"), version=teaching.version))


# The student


def join_room(typed: str | None = None) -> None:
    """Join the room whose code was typed (or given); say why not when there is none."""
    typed = st.session_state.get(state.ROOM_CODE, "") if typed is None else typed
    code = normalize_code(typed)
    if code is None:
        notice("room.bad_code", length=CODE_LENGTH, typed=literal(typed[:20]))
        return
    try:
        room = room_store().get(code)
    except RoomStoreError as error:
        notice("room.unavailable", message=str(error))
        return
    if room is None:
        notice("room.unknown", code=code, hours=HOURS)
        return
    st.session_state[state.JOINED] = Joined(code)


def leave_room() -> None:
    joined = st.session_state.get(state.JOINED)
    if joined is not None:
        st.session_state[state.JOINED] = replace(joined, following=False)
    st.query_params.pop(state.ROOM, None)  # a rerun must not join again from the link


def rejoin_room() -> None:
    joined = st.session_state.get(state.JOINED)
    if joined is not None:
        st.session_state[state.JOINED] = Joined(joined.code)


def open_teachers_view(code: str, room: RoomState) -> None:
    """Take the teacher's view and open the teacher's page (this run ends there)."""
    try:
        view = checked_view(room.view)
    except ValueError as error:  # not what a teacher's session shares: keep this view
        notice("room.unavailable", message=str(error))
        return
    if view.get(state.WEIGHTS) == "trained":  # the teacher's own training stays in the teacher's session
        view[state.WEIGHTS] = "pretrained"
        notice("room.trained")
    for field in SHARED_FIELDS:
        if field in view:
            st.session_state[field] = view[field]
        else:  # the teacher's widget shows its default: so will the student's
            st.session_state.pop(field, None)
    if page_path(room.page) == page_path(st.session_state.get(state.PAGE, "")):
        st.rerun()  # the same page: redrawn in place, quicker than a page switch
    st.switch_page(page(page_path(room.page)), query_params={state.ROOM: code})


def catch_up() -> None:
    """A following student, at the start of a full run (before any widget): open the teacher's page and view if
    they changed since last seen; leave a room that has ended."""
    joined = following()
    if joined is None:
        return
    try:
        room = room_store().get(joined.code)
    except RoomStoreError as error:  # keep following: the next poll asks again
        notice("room.unavailable", message=str(error))
        return
    if room is None:
        st.session_state.pop(state.JOINED, None)
        st.query_params.pop(state.ROOM, None)
        notice("room.ended", code=joined.code)
        return
    if room.version not in (0, joined.seen):
        st.session_state[state.JOINED] = replace(joined, seen=room.version)
        open_teachers_view(joined.code, room)


def following() -> Joined | None:
    joined = st.session_state.get(state.JOINED)
    return joined if joined is not None and joined.following else None


def teacher_changed(joined: Joined) -> bool:
    """Whether the room has ended or has a version this session has not seen (a store error: not yet)."""
    try:
        room = room_store().get(joined.code)
    except RoomStoreError:  # the next poll asks again
        return False
    return room is None or room.version not in (0, joined.seen)


def enter_from_link() -> None:
    """A link with ?room=CODE joins that room (once: a student who left has the parameter removed)."""
    typed = st.query_params.get(state.ROOM)
    if typed is None or state.TEACHING in st.session_state:
        return
    joined = st.session_state.get(state.JOINED)
    if joined is not None and joined.code == normalize_code(typed):
        return
    join_room(typed)
    if state.JOINED not in st.session_state or st.session_state[state.JOINED].code != normalize_code(typed):
        st.query_params.pop(state.ROOM, None)  # not a room: the notice says why


def follow_room(url_path: str) -> None:
    """At the start of every full run, before any widget: note the page (what a teacher shares); a student
    enters a room named by the link and opens the teacher's page and view if they changed."""
    st.session_state[state.PAGE] = url_path
    enter_from_link()
    catch_up()


@st.fragment(run_every=POLL_SECONDS)
def follow_teacher() -> None:
    """A following student's poll: nothing to draw; a change reruns the whole app, whose start (catch_up) takes
    the teacher's view. The poll itself must not: it also runs inside a full run, after the view's widgets."""
    joined = following()
    if joined is not None and teacher_changed(joined):
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
        message = st.session_state.pop(state.ROOM_NOTICE, None)
        if message is not None:
            st.warning(tr(message[0], **message[1]))
        if teaching is not None:
            teacher_panel(teaching)
        elif joined is not None and joined.following:
            st.info(tr("room.following", code=joined.code), icon=":material/cast_for_education:")
            st.caption(tr("room.following_help"))
            st.button(tr("room.leave"), key=state.ROOM_LEAVE, on_click=leave_room, width="stretch")
            follow_teacher()
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
        code.text_input(tr("room.code"), key=state.ROOM_CODE, max_chars=12, placeholder="K7QX")
        join.form_submit_button(tr("room.join"), key=state.ROOM_JOIN, on_click=join_room, width="stretch")


def teacher_panel(teaching: Teaching) -> None:
    link = room_link(app_url(), teaching.code)
    st.caption(tr("room.code_is"))
    st.html(f'<div style="{CODE_STYLE}">{html.escape(teaching.code)}</div>')
    if link.startswith("http"):
        st.image(qr_svg(link), caption=tr("room.qr"), width=180)
    st.code(link, language=None, wrap_lines=True)
    if names_this_computer(link):
        st.caption(tr("room.local_link"))
    st.caption(tr("room.teacher_help"))
    keep_sharing()
    st.button(tr("room.end"), key=state.ROOM_END, on_click=end_room, width="stretch")
