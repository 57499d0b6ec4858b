"""Where class rooms live: the teacher's page and view under a short code, read by the students every second.

No Streamlit here. A room's state is small and serializable (a page's URL path and the view's values as
JSON), so it can be kept in this process (one server, the default) or in Redis (several replicas serving one
class: `TVIZ_REDIS_URL`). Both stores forget a room after `ROOM_TTL` seconds without a change.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

# No 0/O, 1/I/L: a code read from a projector is typed without doubt.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 4
ROOM_TTL = 6 * 3600  # seconds without a change before a room is forgotten (a school day)
MAX_ROOMS = 1000  # rooms one server keeps at once (in-process store)
MAX_VIEW_CHARS = 16_384  # a shared view's parameters as JSON: a link, not a document
REDIS_URL_VARIABLE = "TVIZ_REDIS_URL"
ViewValues = Mapping[str, object]  # view field -> value (str, int, float, bool, None or a list of ints)


class RoomStoreError(RuntimeError):
    """The store cannot answer (Redis is down, or this server keeps as many rooms as it may)."""


@dataclass(frozen=True)
class RoomState:
    """What the students of a room follow. Version 0: the teacher has shared nothing yet."""

    page: str  # the teacher's page, as its URL path ("attention")
    view: dict[str, object]  # the teacher's view: the values of the fields the teacher's session set
    version: int  # one more at every change
    updated: float  # time.time() of the last change


class RoomStore(Protocol):
    def create(self) -> str:
        """A new room with a fresh code; raises RoomStoreError when none can be made."""

    def publish(self, code: str, page: str, view: ViewValues) -> RoomState | None:
        """Share a new page and view (the version grows by one); None when the room no longer exists.

        Raises ValueError for a view larger than MAX_VIEW_CHARS."""

    def get(self, code: str) -> RoomState | None:
        """The room's state, or None when there is no such room (never made, ended or expired)."""

    def end(self, code: str) -> None:
        """Forget the room (its students stop following)."""


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(text: object) -> str | None:
    """A room code as typed ("k7qx", " K7-QX ") in its canonical form, or None if it cannot be one."""
    if not isinstance(text, str):
        return None
    code = text.strip().upper().replace("-", "").replace(" ", "")
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        return None
    return code


def view_json(view: ViewValues) -> str:
    """The view as compact JSON (-inf as -Infinity, which json reads back); ValueError when it is more than a link
    would say, or not JSON."""
    try:
        text = json.dumps(dict(view), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except TypeError as error:
        raise ValueError(f"the view is not JSON: {error}") from error
    if len(text) > MAX_VIEW_CHARS:
        raise ValueError(f"the view is {len(text)} characters long, more than a room shares ({MAX_VIEW_CHARS})")
    return text


class MemoryRoomStore:
    """Rooms in a dict of this process (one server). `clock` is injectable for the expiry tests."""

    def __init__(self, ttl: float = ROOM_TTL, max_rooms: int = MAX_ROOMS, clock=time.monotonic):
        self._ttl, self._max_rooms, self._clock = ttl, max_rooms, clock
        self._rooms: dict[str, tuple[RoomState, float]] = {}  # code -> (state, expiry on the clock)
        self._lock = threading.Lock()

    def _live(self, code: str) -> RoomState | None:
        found = self._rooms.get(code)
        if found is None:
            return None
        if found[1] <= self._clock():
            del self._rooms[code]
            return None
        return found[0]

    def create(self) -> str:
        with self._lock:
            now = self._clock()
            for code in [c for c, (_, expiry) in self._rooms.items() if expiry <= now]:
                del self._rooms[code]
            if len(self._rooms) >= self._max_rooms:
                raise RoomStoreError(f"this server already keeps {self._max_rooms} rooms")
            code = new_code()
            while code in self._rooms:
                code = new_code()
            self._rooms[code] = RoomState("", {}, 0, time.time()), now + self._ttl
            return code

    def publish(self, code: str, page: str, view: ViewValues) -> RoomState | None:
        shared = json.loads(view_json(view))  # checks the size; keeps a copy the caller cannot change
        with self._lock:
            current = self._live(code)
            if current is None:
                return None
            room = RoomState(page, shared, current.version + 1, time.time())
            self._rooms[code] = room, self._clock() + self._ttl
            return room

    def get(self, code: str) -> RoomState | None:
        with self._lock:
            return self._live(code)

    def end(self, code: str) -> None:
        with self._lock:
            self._rooms.pop(code, None)


# A room is a Redis hash (version, page, view, updated) with a TTL. Each script runs atomically in Redis:
# a room is made only under a free code, and a publish never brings back a room that ended or expired.
CREATE_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'version', 0, 'page', '', 'view', '{}', 'updated', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""
PUBLISH_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 'page', ARGV[1], 'view', ARGV[2], 'updated', ARGV[3])
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('EXPIRE', KEYS[1], ARGV[4])
return version
"""


class RedisRoomStore:
    """Rooms in Redis, shared by every replica of the app; Redis expires them (a TTL on each key)."""

    def __init__(self, client, ttl: int = ROOM_TTL, prefix: str = "tviz:room:"):
        """`client`: a redis.Redis made with decode_responses=True."""
        self._client, self._ttl, self._prefix = client, int(ttl), prefix
        self._create = client.register_script(CREATE_SCRIPT)
        self._publish = client.register_script(PUBLISH_SCRIPT)

    @classmethod
    def from_url(cls, url: str, **kwargs) -> RedisRoomStore:
        import redis

        # Short timeouts: a student's poll must not hang a rerun when Redis is away.
        client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=2, socket_connect_timeout=2)
        return cls(client, **kwargs)

    def key(self, code: str) -> str:
        return self._prefix + code

    def create(self) -> str:
        with _redis_errors():
            for _attempt in range(20):
                code = new_code()
                if self._create(keys=[self.key(code)], args=[time.time(), self._ttl]):
                    return code
        raise RoomStoreError("no free room code found")

    def publish(self, code: str, page: str, view: ViewValues) -> RoomState | None:
        text = view_json(view)
        now = time.time()
        with _redis_errors():
            version = self._publish(keys=[self.key(code)], args=[page, text, now, self._ttl])
        return None if version is None else RoomState(page, json.loads(text), int(version), now)

    def get(self, code: str) -> RoomState | None:
        with _redis_errors():
            found = self._client.hgetall(self.key(code))
        if not found:
            return None
        return RoomState(found["page"], json.loads(found["view"]), int(found["version"]), float(found["updated"]))

    def end(self, code: str) -> None:
        with _redis_errors():
            self._client.delete(self.key(code))


@contextlib.contextmanager
def _redis_errors():
    """Turn the client's errors into RoomStoreError (the app says the rooms are unavailable)."""
    import redis

    try:
        yield
    except redis.RedisError as error:
        raise RoomStoreError(f"Redis: {error}") from error


def open_store(environ: Mapping[str, str]) -> RoomStore:
    """Redis when `TVIZ_REDIS_URL` is set (several replicas share the rooms), else this process."""
    url = environ.get(REDIS_URL_VARIABLE)
    return RedisRoomStore.from_url(url) if url else MemoryRoomStore()
