"""What a room's teacher and its students share: this server's store, messages about the room, its links.

A room has three codes (rooms/store.py): the short one is typed from the projector, the link code (short code +
key) is in the students' link and QR code, the teacher code (short code + secret) in the teacher's own link.
"""

from __future__ import annotations

import math
import os
from urllib.parse import urlsplit

import segno
import streamlit as st

from transformer_viz.app.frame.navigation import HOME, PAGES
from transformer_viz.app.rooms.store import RoomStore, RoomStoreError, open_store
from transformer_viz.app.server import state
from transformer_viz.app.server.addresses import browser_address
from transformer_viz.app.server.limits import limits
from transformer_viz.app.session.words import tr


@st.cache_resource(show_spinner=False)
def room_store() -> RoomStore:
    """The rooms of this server: in this process, or in Redis when TVIZ_REDIS_URL is set."""
    allowed = limits()
    return open_store(os.environ, idle=allowed.room_idle_minutes * 60, max_rooms=allowed.rooms)


def client_address() -> str | None:
    """The address of this session's browser, for the limits per address; None on the server's own computer
    (no limit there). Behind a trusted proxy, the address it forwards (server/addresses.py)."""
    return browser_address(st.context.ip_address, (st.context.headers or {}).get("X-Forwarded-For"))


def rate_allows(what: str, rate) -> bool:
    """Whether this browser's address may start a room or try a code now (counted); else say how long to wait.
    The store counts for every replica; an unreachable store does not stop anyone here."""
    address = client_address()
    try:
        wait = 0.0 if address is None else room_store().limiter.allow(what, address, rate)
    except RoomStoreError:
        return True
    if wait:
        notice(f"room.rate.{what}", seconds=math.ceil(wait), minutes=math.ceil(wait / 60))
    return not wait


def notice(key: str, level: str = "warning", **values) -> None:
    """A message about the room (a warning, or "info") for the next time the room's section is drawn."""
    st.session_state[state.ROOM_NOTICE] = (key, values, level)


def show_notice() -> None:
    message = st.session_state.pop(state.ROOM_NOTICE, None)
    if message is not None:
        key, values, level = message
        (st.info if level == "info" else st.warning)(tr(key, **values))


def store_trouble(error: RoomStoreError) -> None:
    """The store did not answer: say why in the room's section and, while Redis is away, above the page."""
    notice(f"room.store.{error.reason}", **error.values)
    if error.reason == "unreachable":
        st.session_state[state.ROOM_DOWN] = True


def store_answered() -> bool:
    """The store answered; whether it had not answered before."""
    return bool(st.session_state.pop(state.ROOM_DOWN, None))


def room_down_banner(where) -> None:
    """Above the page (`where`), while the room cannot be reached: the sidebar may be folded or hidden."""
    in_a_room = state.TEACHING in st.session_state or state.JOINED in st.session_state
    if in_a_room and st.session_state.get(state.ROOM_DOWN):
        where.warning(tr("room.down"), icon=":material/cloud_off:")


def room_news(key: str, **values) -> None:
    """What became of the room, said above the page (the sidebar may be folded or hidden): a link that opens no
    room, a room that ended or is led from elsewhere. Said until dismissed, another page is opened, or a room is
    started, joined or led."""
    st.session_state[state.ROOM_NEWS] = (key, values, st.session_state.get(state.PAGE, ""))


def forget_room_news() -> None:
    st.session_state.pop(state.ROOM_NEWS, None)


def room_news_banner(where) -> None:
    """Above the page (`where`): the room's news on the page it was said on, with a button that dismisses it."""
    news = st.session_state.get(state.ROOM_NEWS)
    if news is None:
        return
    key, values, on_page = news
    if on_page != st.session_state.get(state.PAGE, ""):
        forget_room_news()
        return
    where.warning(tr(key, **values), icon=":material/groups:")
    where.button(tr("room.dismiss"), key=state.ROOM_DISMISS, on_click=forget_room_news, icon=":material/close:",
                 type="tertiary")


def idle_minutes() -> int:
    return limits().room_idle_minutes


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


def room_link(base: str, link_code: str) -> str:
    """A student's link to a room."""
    return f"{base}/?{state.ROOM}={link_code}"


def teacher_link(base: str, teacher_code: str) -> str:
    """The teacher's own link: it opens the room as its teacher again (after a reload, on another computer)."""
    return f"{base}/?{state.TEACH}={teacher_code}"


def qr_svg(link: str) -> str:
    """The link as a QR code (an SVG document), dark on white so a phone reads it off a projector."""
    return segno.make(link, error="m").svg_inline(scale=4, border=2, dark="#111", light="#fff")
