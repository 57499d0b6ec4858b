"""A room's answers to the lesson's questions: per question, each student's latest answer (no Streamlit here).

A student is a random number drawn by their session for the room: no name, nothing that outlives the room. The
answers live as long as their room (the store forgets them when it ends or expires) and are bounded: at most
MAX_ANSWERS per room, each question key and answer at most MAX_CHARS characters.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Protocol

MAX_ANSWERS = 20_000  # per room: 200 students × 100 questions
MAX_CHARS = 64  # a question key, a student's number or an answer
Answers = dict[str, str]  # student -> answer


class AnswerBook(Protocol):
    def answer(self, code: str, question: str, student: str, said: str) -> bool:
        """Keep a student's answer (replacing their previous one); False when the room no longer exists or keeps
        as many answers as it may. ValueError for a key or answer longer than MAX_CHARS."""

    def answers(self, code: str, question: str) -> Answers:
        """Every student's answer to one question."""

    def every_answer(self, code: str) -> dict[str, Answers]:
        """question -> its answers, for every question of the room."""

    def forget(self, code: str) -> None: ...


def check_sizes(*texts: str) -> None:
    for text in texts:
        if not isinstance(text, str) or not 0 < len(text) <= MAX_CHARS or "\x1f" in text:
            raise ValueError(f"an answer's key, student and value are 1 to {MAX_CHARS} characters")


class MemoryAnswerBook:
    """The answers in this process; `room_exists(code)` tells whether a room still lives."""

    def __init__(self, room_exists: Callable[[str], object]) -> None:
        self._room_exists = room_exists
        self._rooms: dict[str, dict[str, Answers]] = {}  # code -> question -> answers
        self._lock = threading.Lock()

    def answer(self, code: str, question: str, student: str, said: str) -> bool:
        check_sizes(question, student, said)
        if not self._room_exists(code):
            return False
        with self._lock:
            self._rooms = {c: q for c, q in self._rooms.items() if c == code or self._room_exists(c)}
            questions = self._rooms.setdefault(code, {})
            if sum(map(len, questions.values())) >= MAX_ANSWERS and student not in questions.get(question, {}):
                return False
            questions.setdefault(question, {})[student] = said
            return True

    def answers(self, code: str, question: str) -> Answers:
        with self._lock:
            return dict(self._rooms.get(code, {}).get(question, {}))

    def every_answer(self, code: str) -> dict[str, Answers]:
        with self._lock:
            return {q: dict(a) for q, a in self._rooms.get(code, {}).items()}

    def forget(self, code: str) -> None:
        with self._lock:
            self._rooms.pop(code, None)


# One Redis hash per room, field "question␟student": a student's answer is one HSET, a question's answers one HSCAN
# of its prefix. Atomic: the room must exist and the hash must hold fewer than the cap (a replaced answer passes).
ANSWER_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then
  return -1
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[4]))
return 1
"""
SEPARATOR = "\x1f"


class RedisAnswerBook:
    def __init__(self, client, prefix: str, idle: int, errors=contextlib.nullcontext) -> None:
        """`errors()`: a context that turns the client's errors into the store's."""
        self._client, self._prefix, self._idle, self._errors = client, prefix, idle, errors
        self._answer = client.register_script(ANSWER_SCRIPT)

    def key(self, code: str) -> str:
        return f"{self._prefix}{code}:answers"

    def answer(self, code: str, question: str, student: str, said: str) -> bool:
        check_sizes(question, student, said)
        with self._errors():
            made = self._answer(keys=[self._prefix + code, self.key(code)],
                                args=[question + SEPARATOR + student, said, MAX_ANSWERS, self._idle])
        return made == 1

    def answers(self, code: str, question: str) -> Answers:
        with self._errors():
            found = self._client.hscan_iter(self.key(code), match=_glob_escaped(question) + SEPARATOR + "*",
                                            count=1000)
            return {field.split(SEPARATOR, 1)[1]: said for field, said in found}

    def every_answer(self, code: str) -> dict[str, Answers]:
        with self._errors():
            found = self._client.hgetall(self.key(code))
        questions: dict[str, Answers] = {}
        for field, said in found.items():
            question, student = field.split(SEPARATOR, 1)
            questions.setdefault(question, {})[student] = said
        return questions

    def keep(self, code: str) -> None:
        """The room lives on (its teacher's heartbeat): so do its answers."""
        self._client.expire(self.key(code), self._idle)

    def forget(self, code: str) -> None:
        with self._errors():
            self._client.delete(self.key(code))


def _glob_escaped(text: str) -> str:
    """`text` matched literally by a Redis MATCH pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
