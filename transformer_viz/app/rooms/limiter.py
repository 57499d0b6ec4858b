"""How often one client address may do something to the rooms (start one, try a short code), whatever sessions
it opens (no Streamlit here). A fixed window per (what, address): at most `most` in `window` seconds; in this
process, or in Redis for every replica at once (one INCR and one EXPIRE)."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from dataclasses import dataclass

MAX_ADDRESSES = 100_000  # windows kept at once in a process (older ones are dropped first)


@dataclass(frozen=True)
class Rate:
    most: int  # actions allowed per window
    window: float  # seconds


ROOM_STARTS = Rate(20, 600.0)  # a school's teachers behind one address start a few rooms a lesson, not twenty
CODE_GUESSES = Rate(30, 60.0)  # short codes tried per minute from one address (a session may try 5)


class MemoryLimiter:
    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._windows: dict[tuple[str, str], tuple[float, int]] = {}  # (what, address) -> (window start, count)
        self._lock = threading.Lock()

    def allow(self, what: str, address: str, rate: Rate) -> float:
        """0 when allowed now (and counted); else the seconds until it is."""
        now = self._clock()
        with self._lock:
            start, count = self._windows.get((what, address), (now, 0))
            if now - start >= rate.window:
                start, count = now, 0
            if count >= rate.most:
                return start + rate.window - now
            self._windows[what, address] = (start, count + 1)
            if len(self._windows) > MAX_ADDRESSES:
                self._windows.pop(next(iter(self._windows)))
            return 0.0


class RedisLimiter:
    def __init__(self, client, prefix: str, errors=contextlib.nullcontext) -> None:
        self._client, self._prefix, self._errors = client, prefix, errors

    def allow(self, what: str, address: str, rate: Rate) -> float:
        key = f"{self._prefix}rate:{what}:{address}"
        with self._errors():
            count, left = self._client.pipeline().incr(key).pttl(key).execute()
            if left < 0:  # a new window
                self._client.pexpire(key, math.ceil(rate.window * 1000))
                left = rate.window * 1000
        return 0.0 if count <= rate.most else left / 1000
