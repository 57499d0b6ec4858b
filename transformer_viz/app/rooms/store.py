"""Where class rooms live: the teacher's page and view under a short code, read by the students every second.

No Streamlit here. A room's state is small and serializable (a page's URL path and the view's values as
JSON), so it can be kept in this process (one server, the default) or in Redis (several replicas serving one
class: `TVIZ_REDIS_URL`).

A room has three codes. Its short code (4 characters) is typed from the projector; a student's link and QR
code carry the short code and a key (16 characters: not guessable, so a stranger cannot find a live room);
the teacher's link carries the short code and a secret (24 characters) that opens the room as its teacher
again after a reload or on another device, where it takes the lead: the session it opened in leads the room from
then on, and the publishes and heartbeats of the session that led it before change nothing. Both stores:
- forget a room `idle` seconds after the teacher's last sign of life (a publish or a heartbeat);
- keep at most `max_rooms` rooms, and one room per owner (a session): a new room of an owner ends its previous
  one, so one session cannot fill the store.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from transformer_viz.app.rooms.answers import AnswerBook, MemoryAnswerBook, RedisAnswerBook
from transformer_viz.app.rooms.limiter import MemoryLimiter, RedisLimiter

# No 0/O, 1/I/L: a code read from a projector is typed without doubt.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 4
KEY_LENGTH = 12  # after the short code in a student's link: 31^12 ≈ 2^59
SECRET_LENGTH = 20  # after the short code in the teacher's link: 31^20 ≈ 2^99
LINK_CODE_LENGTH = CODE_LENGTH + KEY_LENGTH
TEACHER_CODE_LENGTH = CODE_LENGTH + SECRET_LENGTH
ROOM_IDLE = 30 * 60  # seconds without a sign of the teacher before a room is forgotten (TVIZ_ROOM_IDLE_MINUTES)
MAX_ROOMS = 1000  # rooms one server (or one Redis) keeps at once (TVIZ_ROOMS)
EMPTY_GRACE = 120  # seconds: a room nobody joined within this may be evicted for a new one when the store is full
MAX_VIEW_CHARS = 16_384  # a shared view's parameters as JSON: a link, not a document
REDIS_URL_VARIABLE = "TVIZ_REDIS_URL"
LOG = logging.getLogger(__name__)
ViewValues = Mapping[str, object]  # view field -> value (str, int, float, bool, None or a list of ints)


class RoomStoreError(RuntimeError):
    """The store cannot answer. `reason` names why for the screen ("full": it keeps as many rooms as it may, with
    `rooms`; "unreachable": Redis does not answer); the message, for the server's log only, may say more."""

    def __init__(self, reason: str, message: str, **values) -> None:
        super().__init__(message)
        self.reason, self.values = reason, values


@dataclass(frozen=True)
class NewRoom:
    """A room just made: what its teacher's session keeps."""

    code: str  # typed by students
    link_code: str  # in the students' link and QR code
    teacher_code: str  # in the teacher's link only


@dataclass(frozen=True)
class RoomState:
    """What the students of a room follow. Version 0: the teacher has shared nothing yet."""

    page: str  # the teacher's page, as its URL path ("attention")
    view: dict[str, object]  # the teacher's view: the values of the fields the teacher's session set
    version: int  # one more at every change
    updated: float  # time.time() of the last change
    key: str = ""  # the rest of the students' link code
    teacher_hash: str = ""  # sha256 of the teacher's secret
    teacher_seen: float = 0.0  # time.time() of the teacher's last publish or heartbeat
    lesson: dict[str, object] = field(default_factory=dict)  # the lesson's shared moments: "revealed", the keys
    #                            of the questions whose answer the teacher revealed; "ticket", the exit ticket's
    leader: str = ""  # the owner (a session) leading the room ("": a room made before leaders were kept)
    created: float = 0.0  # time.time() when it was made
    joined: bool = False  # a student joined it once: a full store never evicts it for a new teacher

    def opens_for_student(self, link_code: str) -> bool:
        """Whether a link code's key is this room's (compared in constant time)."""
        return hmac.compare_digest(link_code[CODE_LENGTH:].encode(), self.key.encode())

    def opens_for_teacher(self, teacher_code: str) -> bool:
        return hmac.compare_digest(secret_hash(teacher_code[CODE_LENGTH:]).encode(), self.teacher_hash.encode())

    def led_by(self, owner: str) -> bool:
        """Whether a publish or heartbeat by `owner` counts: it leads the room, or it does not say who it is (""),
        or the room has no leader."""
        return not owner or not self.leader or self.leader == owner


class RoomStore(Protocol):
    def create(self, owner: str) -> NewRoom:
        """A new room with fresh codes, ending `owner`'s previous room; raises RoomStoreError when none can be
        made (the store is full, or Redis is away)."""

    def publish(self, code: str, page: str, view: ViewValues, by: str = "") -> RoomState | None:
        """Share a new page and view (the version grows by one; the teacher is seen); None when the room no
        longer exists. `by`: the owner publishing; when another one leads the room, nothing changes and the room
        is returned as it is (its `leader` says who leads). Raises ValueError for a view larger than
        MAX_VIEW_CHARS."""

    def heartbeat(self, code: str, by: str = "") -> RoomState | None:
        """The teacher is still here: the room lives `idle` seconds more. None when it no longer exists; `by` as
        for publish."""

    def lead(self, code: str, owner: str) -> RoomState | None:
        """`owner` leads the room from now on (its teacher's link, opened in another session), as if it had made
        it: the teacher is seen, `owner`'s previous room ends, and the previous leader's publishes and heartbeats
        change nothing. None when there is no such room."""

    def publish_lesson(self, code: str, lesson: ViewValues, by: str = "") -> RoomState | None:
        """Share the lesson's moments (the answers revealed, the exit ticket): the version grows by one, as with
        a publish; None when the room no longer exists; `by` as for a publish. Raises ValueError when larger than
        MAX_VIEW_CHARS."""

    def get(self, code: str) -> RoomState | None:
        """The room's state, or None when there is no such room (never made, ended or expired)."""

    def end(self, code: str) -> None:
        """Forget the room (its students stop following) and its answers."""

    def mark_joined(self, code: str) -> None:
        """A student joined the room: it is a class's, not one nobody ever joined (see `create`)."""

    answers: AnswerBook  # the room's answers to the lesson's questions (rooms/answers.py)
    limiter: MemoryLimiter | RedisLimiter  # how often one client address may start rooms and try codes


def new_code(length: int = CODE_LENGTH) -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def normalize_code(text: object, lengths: tuple[int, ...] = (CODE_LENGTH,)) -> str | None:
    """A code as typed ("k7qx", " K7-QX ") in its canonical form, or None if it cannot be one of `lengths`."""
    if not isinstance(text, str) or len(text) > 4 * max(lengths):
        return None
    code = text.strip().upper().replace("-", "").replace(" ", "")
    if len(code) not in lengths or any(c not in CODE_ALPHABET for c in code):
        return None
    return code


def made_room(code: str) -> tuple[NewRoom, str, str]:
    """A new room's codes, its key and the hash of its teacher's secret."""
    key, secret = new_code(KEY_LENGTH), new_code(SECRET_LENGTH)
    return NewRoom(code, code + key, code + secret), key, secret_hash(secret)


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

    def __init__(self, idle: float = ROOM_IDLE, max_rooms: int = MAX_ROOMS, clock=time.monotonic):
        self._idle, self._max_rooms, self._clock = idle, max_rooms, clock
        self._rooms: dict[str, tuple[RoomState, float]] = {}  # code -> (state, expiry on the clock)
        self._owners: dict[str, str] = {}  # owner -> the code of their room
        self._lock = threading.Lock()
        self.answers = MemoryAnswerBook(self.get)
        self.limiter = MemoryLimiter()

    def _live(self, code: str) -> RoomState | None:
        found = self._rooms.get(code)
        if found is None:
            return None
        if found[1] <= self._clock():
            del self._rooms[code]
            return None
        return found[0]

    def _keep(self, code: str, room: RoomState) -> RoomState:
        self._rooms[code] = room, self._clock() + self._idle
        return room

    def create(self, owner: str) -> NewRoom:
        with self._lock:
            now = self._clock()
            self._rooms.pop(self._owners.pop(owner, ""), None)
            for code in [c for c, (_, expiry) in self._rooms.items() if expiry <= now]:
                del self._rooms[code]
            if len(self._rooms) >= self._max_rooms and not self._evict_one_never_joined():
                raise RoomStoreError("full", f"this server already keeps {self._max_rooms} rooms",
                                     rooms=self._max_rooms)
            self._owners = {who: code for who, code in self._owners.items() if code in self._rooms}
            code = new_code()
            while code in self._rooms:
                code = new_code()
            room, key, teacher_hash = made_room(code)
            now = time.time()
            self._keep(code, RoomState("", {}, 0, now, key, teacher_hash, now, leader=owner, created=now))
            self._owners[owner] = code
            return room

    def publish(self, code: str, page: str, view: ViewValues, by: str = "") -> RoomState | None:
        shared = json.loads(view_json(view))  # checks the size; keeps a copy the caller cannot change
        with self._lock:
            current = self._live(code)
            if current is None or not current.led_by(by):
                return current
            now = time.time()
            return self._keep(code, replace(current, page=page, view=shared, version=current.version + 1,
                                             updated=now, teacher_seen=now))

    def heartbeat(self, code: str, by: str = "") -> RoomState | None:
        with self._lock:
            current = self._live(code)
            if current is None or not current.led_by(by):
                return current
            return self._keep(code, replace(current, teacher_seen=time.time()))

    def lead(self, code: str, owner: str) -> RoomState | None:
        with self._lock:
            current = self._live(code)
            if current is None:
                return None
            previous = self._owners.get(owner, code)
            if previous != code:
                self._rooms.pop(previous, None)
            if self._owners.get(current.leader) == code:
                del self._owners[current.leader]
            self._owners[owner] = code
            return self._keep(code, replace(current, leader=owner, teacher_seen=time.time()))

    def publish_lesson(self, code: str, lesson: ViewValues, by: str = "") -> RoomState | None:
        shared = json.loads(view_json(lesson))
        with self._lock:
            current = self._live(code)
            if current is None or not current.led_by(by):
                return current
            now = time.time()
            return self._keep(code, replace(current, lesson=shared, version=current.version + 1, updated=now,
                                             teacher_seen=now))

    def get(self, code: str) -> RoomState | None:
        with self._lock:
            return self._live(code)

    def end(self, code: str) -> None:
        with self._lock:
            self._rooms.pop(code, None)
        self.answers.forget(code)

    def mark_joined(self, code: str) -> None:
        with self._lock:
            found = self._rooms.get(code)
            if found is not None and not found[0].joined:
                self._rooms[code] = replace(found[0], joined=True), found[1]

    def _evict_one_never_joined(self) -> bool:
        """Make room for a teacher: forget the oldest room nobody joined, made EMPTY_GRACE ago or more."""
        empty = [(room.created, code) for code, (room, _) in self._rooms.items()
                 if not room.joined and room.created <= time.time() - EMPTY_GRACE]
        if not empty:
            return False
        del self._rooms[min(empty)[1]]
        return True


# A room is a Redis hash with a TTL (the idle time), listed in a sorted set by expiry (to count the live rooms);
# an owner's room is a key with the same TTL, renewed with the room's. Each script runs atomically in Redis: a
# room is made only under a free code and below the cap, and a publish or heartbeat never brings back a room
# that ended or expired.
CREATE_SCRIPT = """
local now, idle = tonumber(ARGV[2]), tonumber(ARGV[3])
local previous = redis.call('GET', KEYS[3])
if previous then
  redis.call('DEL', ARGV[7] .. previous)
  redis.call('ZREM', KEYS[2], previous)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  -- full: forget the oldest room nobody joined, made EMPTY_GRACE (ARGV[9]) ago or more; else refuse
  local evicted = false
  for _, code in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local room = redis.call('HMGET', ARGV[7] .. code, 'joined', 'created', 'leader')
    if room[1] ~= '1' and tonumber(room[2] or '0') <= now - tonumber(ARGV[9]) then
      redis.call('DEL', ARGV[7] .. code, ARGV[7] .. code .. ':answers')
      redis.call('ZREM', KEYS[2], code)
      if room[3] and redis.call('GET', ARGV[7] .. 'owner:' .. room[3]) == code then
        redis.call('DEL', ARGV[7] .. 'owner:' .. room[3])
      end
      evicted = true
      break
    end
  end
  if not evicted then return -1 end
end
redis.call('HSET', KEYS[1], 'version', 0, 'page', '', 'view', '{}', 'updated', ARGV[2], 'key', ARGV[5],
           'teacher_hash', ARGV[6], 'teacher_seen', ARGV[2], 'created', ARGV[2])
redis.call('HSET', KEYS[1], 'leader', ARGV[8])
redis.call('EXPIRE', KEYS[1], idle)
redis.call('ZADD', KEYS[2], now + idle, ARGV[1])
redis.call('SET', KEYS[3], ARGV[1], 'EX', idle)
return 1
"""
JOINED_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'joined', '1') end
"""
# KEYS: the room, the index; ARGV: code, now, idle, the keys' prefix, the owner publishing ('': not said), then
# for a publish: page, view (or "", the lesson's moments, "lesson").
PUBLISH_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local now, idle = tonumber(ARGV[2]), tonumber(ARGV[3])
local leader = redis.call('HGET', KEYS[1], 'leader')
if ARGV[5] ~= '' and leader and leader ~= '' and leader ~= ARGV[5] then return redis.call('HGETALL', KEYS[1]) end
if ARGV[8] == 'lesson' then
  redis.call('HSET', KEYS[1], 'lesson', ARGV[7], 'updated', ARGV[2])
  redis.call('HINCRBY', KEYS[1], 'version', 1)
elseif ARGV[6] then
  redis.call('HSET', KEYS[1], 'page', ARGV[6], 'view', ARGV[7], 'updated', ARGV[2])
  redis.call('HINCRBY', KEYS[1], 'version', 1)
end
redis.call('HSET', KEYS[1], 'teacher_seen', ARGV[2])
redis.call('EXPIRE', KEYS[1], idle)
redis.call('ZADD', KEYS[2], now + idle, ARGV[1])
if leader and redis.call('GET', ARGV[4] .. 'owner:' .. leader) == ARGV[1] then
  redis.call('EXPIRE', ARGV[4] .. 'owner:' .. leader, idle)
end
return redis.call('HGETALL', KEYS[1])
"""
# KEYS: the room, the index, the new leader's owner key; ARGV: code, now, idle, the new leader, the keys' prefix.
LEAD_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local now, idle = tonumber(ARGV[2]), tonumber(ARGV[3])
local previous = redis.call('GET', KEYS[3])
if previous and previous ~= ARGV[1] then
  redis.call('DEL', ARGV[5] .. previous)
  redis.call('ZREM', KEYS[2], previous)
end
local leader = redis.call('HGET', KEYS[1], 'leader')
if leader and redis.call('GET', ARGV[5] .. 'owner:' .. leader) == ARGV[1] then
  redis.call('DEL', ARGV[5] .. 'owner:' .. leader)
end
redis.call('HSET', KEYS[1], 'leader', ARGV[4], 'teacher_seen', ARGV[2])
redis.call('EXPIRE', KEYS[1], idle)
redis.call('ZADD', KEYS[2], now + idle, ARGV[1])
redis.call('SET', KEYS[3], ARGV[1], 'EX', idle)
return redis.call('HGETALL', KEYS[1])
"""


class RedisRoomStore:
    """Rooms in Redis, shared by every replica of the app; Redis expires them (a TTL on each key)."""

    def __init__(self, client, idle: int = ROOM_IDLE, max_rooms: int = MAX_ROOMS, prefix: str = "tviz:room:"):
        """`client`: a redis.Redis made with decode_responses=True."""
        self._client, self._idle, self._max_rooms, self._prefix = client, int(idle), max_rooms, prefix
        self._create = client.register_script(CREATE_SCRIPT)
        self._touch = client.register_script(PUBLISH_SCRIPT)
        self.answers = RedisAnswerBook(client, prefix, int(idle), errors=_redis_errors)
        self.limiter = RedisLimiter(client, prefix, errors=_redis_errors)
        self._joined = client.register_script(JOINED_SCRIPT)
        self._lead = client.register_script(LEAD_SCRIPT)

    @classmethod
    def from_url(cls, url: str, **kwargs) -> RedisRoomStore:
        import redis

        # Short timeouts: a student's poll must not hang a rerun when Redis is away.
        client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=2, socket_connect_timeout=2)
        return cls(client, **kwargs)

    def key(self, code: str) -> str:
        return self._prefix + code

    @property
    def index(self) -> str:
        return self._prefix + "index"

    def create(self, owner: str) -> NewRoom:
        with _redis_errors():
            for _attempt in range(20):
                room, key, teacher_hash = made_room(new_code())
                made = self._create(keys=[self.key(room.code), self.index, self._prefix + "owner:" + owner],
                                    args=[room.code, time.time(), self._idle, self._max_rooms, key, teacher_hash,
                                          self._prefix, owner, EMPTY_GRACE])
                if made == 1:
                    return room
                if made == -1:
                    raise RoomStoreError("full", f"Redis already keeps {self._max_rooms} rooms",
                                         rooms=self._max_rooms)
        raise RoomStoreError("full", "no free room code found", rooms=self._max_rooms)

    def publish(self, code: str, page: str, view: ViewValues, by: str = "") -> RoomState | None:
        text = view_json(view)
        with _redis_errors():
            fields = self._touch(keys=[self.key(code), self.index],
                                 args=[code, time.time(), self._idle, self._prefix, by, page, text])
        return room_of(dict(zip(fields[::2], fields[1::2], strict=True))) if fields else None

    def publish_lesson(self, code: str, lesson: ViewValues, by: str = "") -> RoomState | None:
        text = view_json(lesson)
        with _redis_errors():
            fields = self._touch(keys=[self.key(code), self.index],
                                 args=[code, time.time(), self._idle, self._prefix, by, "", text, "lesson"])
        return room_of(dict(zip(fields[::2], fields[1::2], strict=True))) if fields else None

    def heartbeat(self, code: str, by: str = "") -> RoomState | None:
        with _redis_errors():
            fields = self._touch(keys=[self.key(code), self.index],
                                 args=[code, time.time(), self._idle, self._prefix, by])
            if fields:
                self.answers.keep(code)  # the answers live as long as their room
        return room_of(dict(zip(fields[::2], fields[1::2], strict=True))) if fields else None

    def lead(self, code: str, owner: str) -> RoomState | None:
        with _redis_errors():
            fields = self._lead(keys=[self.key(code), self.index, self._prefix + "owner:" + owner],
                                args=[code, time.time(), self._idle, owner, self._prefix])
        return room_of(dict(zip(fields[::2], fields[1::2], strict=True))) if fields else None

    def get(self, code: str) -> RoomState | None:
        with _redis_errors():
            found = self._client.hgetall(self.key(code))
        return room_of(found) if found else None

    def end(self, code: str) -> None:
        with _redis_errors():
            self._client.delete(self.key(code), self.answers.key(code))
            self._client.zrem(self.index, code)

    def mark_joined(self, code: str) -> None:
        with _redis_errors():
            self._joined(keys=[self.key(code)])


def room_of(found: Mapping[str, str]) -> RoomState:
    """A room from its Redis hash."""
    return RoomState(found["page"], json.loads(found["view"]), int(found["version"]), float(found["updated"]),
                     found["key"], found["teacher_hash"], float(found["teacher_seen"]),
                     json.loads(found.get("lesson", "{}")), found.get("leader", ""), float(found.get("created", 0)),
                     found.get("joined") == "1")


@contextlib.contextmanager
def _redis_errors():
    """Turn the client's errors into RoomStoreError (the app says the rooms cannot be reached; Redis's own
    message, which names its address, goes to the server's log only)."""
    import redis

    try:
        yield
    except redis.RedisError as error:
        LOG.warning("class rooms: Redis does not answer: %s", error)
        raise RoomStoreError("unreachable", f"Redis: {error}") from error


def open_store(environ: Mapping[str, str], idle: float = ROOM_IDLE, max_rooms: int = MAX_ROOMS) -> RoomStore:
    """Redis when `TVIZ_REDIS_URL` is set (several replicas share the rooms), else this process."""
    url = environ.get(REDIS_URL_VARIABLE)
    if url:
        return RedisRoomStore.from_url(url, idle=int(idle), max_rooms=max_rooms)
    return MemoryRoomStore(idle=idle, max_rooms=max_rooms)
