"""The teacher's moves pushed to the following students of this server process.

One thread per process reads each room that its following students follow (one store read per room every
PUSH_SECONDS) and asks Streamlit to rerun each student whose room changed, with the session's last page and link,
as Streamlit's own rerun-on-save does. The student's run takes the teacher's view at its start (follow.catch_up).

Before, each student polled every 0.5 s: two fragment runs a second per student, one more run to rerun the app,
and a race: a poll that reached the server as a run ended made Streamlit start a new ScriptRunner and ignore the
old one's last events, and the student's page stayed half-drawn. A pushed student's browser sends nothing unless
the student clicks.

Streamlit has no public way to rerun another session: `Runtime.get_app_session` is public, the session's last
client state and event loop are not (`_client_state`, `_event_loop`). Where they are missing (another Streamlit),
`PUSHES` is False and following polls (follow.POLL_SECONDS), as it does with TVIZ_ROOM_PUSH=0.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

from streamlit.runtime import Runtime
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner import get_script_run_ctx

from transformer_viz.app.rooms.store import RoomState, RoomStore, RoomStoreError
from transformer_viz.app.server.limits import limits
from transformer_viz.app.server.state import Joined

_LOGGER = logging.getLogger(__name__)
PUSH_SECONDS = 0.1  # how often the thread reads the rooms followed here (one store read per room: ~0.1 ms in Redis)
# A student's session is rerun at most this often: a teacher (or a script) changing the view 20 times a second costs
# the server no more than the students' old polls did (2 a second each), whatever the size of the class.
PUSH_GAP_SECONDS = 0.5
AWAY_SECONDS = 90  # a teacher not heard from for this long (3 missed heartbeats) is said to be away
PUSHES = callable(getattr(Runtime, "get_app_session", None)) and {"_client_state", "_event_loop"} <= set(
    AppSession.__init__.__code__.co_names)


def away_minutes(room: RoomState) -> int:
    """Whole minutes since the teacher was last heard from, once that is more than AWAY_SECONDS (else 0)."""
    silent = time.time() - room.teacher_seen
    return max(1, int(silent // 60)) if silent > AWAY_SECONDS else 0


def needs_redraw(room: RoomState | None, unreachable: bool, joined: Joined, was_down: bool) -> bool:
    """Whether a following student's page must be drawn again: the room has ended, has a version the student has not
    seen, its teacher's absence changed, or the store stopped (`unreachable`) or started answering again."""
    if unreachable:
        return not was_down
    return was_down or room is None or room.version not in (0, joined.seen) or away_minutes(room) != joined.away


@dataclass
class Watched:
    """A following student's session as its last full run left it."""

    store: RoomStore
    joined: Joined
    was_down: bool  # the store did not answer that run
    since: float  # the watcher's clock when that run reported


class Watcher:
    """The following students of this process, and the thread that reruns them when their room changes."""

    def __init__(self, every: float | None = PUSH_SECONDS, clock=time.monotonic, rerun=None) -> None:
        """`every` seconds a thread pushes, from the first watch on (None: only when push_once is called);
        `rerun(session_id) -> bool` asks for a session's rerun (default: Streamlit's, `rerun_session`)."""
        self._every, self._clock, self._rerun = every, clock, rerun or rerun_session
        self._lock = threading.Lock()
        self._watched: dict[str, Watched] = {}  # session id ->
        self._pushed_at: dict[str, float] = {}  # session id -> the clock's time of its last rerun
        self._thread: threading.Thread | None = None

    def watch(self, session_id: str, store: RoomStore, joined: Joined, was_down: bool) -> None:
        with self._lock:
            self._watched[session_id] = Watched(store, joined, was_down, self._clock())
            if self._thread is None and self._every is not None:
                self._thread = threading.Thread(target=self._run, name="tviz-room-push", daemon=True)
                self._thread.start()

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._watched.pop(session_id, None)
            self._pushed_at.pop(session_id, None)

    def _run(self) -> None:
        while True:
            time.sleep(self._every)
            try:
                self.push_once()
            except Exception:  # a store's surprise must not end pushing for the whole process
                _LOGGER.exception("pushing the rooms' changes")

    def push_once(self) -> None:
        """Read each followed room once; rerun each student whose page must be drawn again: once per full run (not
        again before the session's next run reports), and at most once per PUSH_GAP_SECONDS."""
        now = self._clock()
        with self._lock:
            rooms: dict[tuple[int, str], list[tuple[str, Watched]]] = defaultdict(list)
            for session_id, watched in self._watched.items():
                pushed_at = self._pushed_at.get(session_id, -math.inf)
                if pushed_at < watched.since and now - pushed_at >= PUSH_GAP_SECONDS:
                    rooms[id(watched.store), watched.joined.code].append((session_id, watched))
        for students in rooms.values():
            store, code = students[0][1].store, students[0][1].joined.code
            try:
                room, unreachable = store.get(code), False
            except RoomStoreError:
                room, unreachable = None, True
            for session_id, watched in students:
                if needs_redraw(room, unreachable, watched.joined, watched.was_down):
                    with self._lock:
                        self._pushed_at[session_id] = now
                    if not self._rerun(session_id):
                        self.forget(session_id)


def rerun_session(session_id: str) -> bool:
    """Ask Streamlit to rerun a session with its last page and link, on its event loop; False when it is gone."""
    session = Runtime.instance().get_app_session(session_id)
    if session is None:
        return False
    session._event_loop.call_soon_threadsafe(lambda: session.request_rerun(session._client_state))
    return True


WATCHER = Watcher()


def this_session() -> str | None:
    """This run's session id, where the server pushes to it: a session its Streamlit runtime knows (AppTest's
    too), unless TVIZ_ROOM_PUSH=0."""
    ctx = get_script_run_ctx()
    if ctx is None or not PUSHES or not limits().room_push or not Runtime.exists():
        return None
    return ctx.session_id if Runtime.instance().get_app_session(ctx.session_id) is not None else None


def watch_this_session(store: RoomStore, joined: Joined, was_down: bool) -> bool:
    """From a following student's full run: push the room's changes to this session from now on (False: the
    server cannot push to it)."""
    session_id = this_session()
    if session_id is not None:
        WATCHER.watch(session_id, store, joined, was_down)
    return session_id is not None


def forget_this_session() -> None:
    """From a run of a session that follows no room (any more)."""
    session_id = this_session()
    if session_id is not None:
        WATCHER.forget(session_id)
