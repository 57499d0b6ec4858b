"""A lesson step's question as data: what kind of answer it takes, its true answer computed from the live model,
and what would give that answer away before the reveal (no Streamlit here).

A step's `show(host)` draws what may be seen before the reveal and returns its `Question`; the question's `reveal`
draws what belongs to the answer and returns the answer's words. The runner calls `reveal` only once the answer is
revealed, so the answer's figures and numbers are not even built before. Everyone answers the same way: one of
a few choices (CHOICE), a number within a tolerance (NUMBER), or a token of the input (TOKEN: a choice whose ids
are the tokens' positions).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CHOICE, NUMBER, TOKEN, NONE = "choice", "number", "token", "none"
MAX_SAID = 64  # characters of an answer as kept (a choice id or a number)


@dataclass(frozen=True)
class Choice:
    id: str  # stable: in the room's answers and the CSV, never translated
    label: str  # what the button says, in the session's language (a token: as typed, never Markdown)


@dataclass(frozen=True)
class Question:
    """A step's question. `truth`: the choice id, or the number; `tells`: numbers and arrays the answer rests on,
    which nothing drawn before the reveal may show (tests/test_lesson_leaks.py looks for them)."""

    text: str
    kind: str
    reveal: Callable[[Any], str]  # (host) -> the answer's words, after drawing the answer's figures
    truth: str | float | None = None
    choices: tuple[Choice, ...] = ()
    tolerance: float = 0.0  # NUMBER: an answer this close to the truth is right
    low: float = 0.0  # NUMBER: the range an answer is typed in (and the class's histogram spans)
    high: float = 1.0
    tells: tuple[Any, ...] = ()
    step: int = 0  # the lesson step (from 1), set by the runner

    @property
    def answerable(self) -> bool:
        return self.kind != NONE and self.truth is not None

    def key(self, context: str = "") -> str:
        """The question's id in a room and a CSV: its step and a hash of what it asks about (`context`: the
        view, as its link says it) and of its choices, the same in every language; never of its truth."""
        asked = json.dumps([self.step, self.kind, [c.id for c in self.choices], self.low, self.high, context])
        return f"{self.step}-{hashlib.sha256(asked.encode()).hexdigest()[:10]}"

    def read(self, said: object) -> str | None:
        """An answer as kept (a choice id, or the number as text), or None when it is not one of this question."""
        if said is None:
            return None
        if self.kind == NUMBER:
            try:
                value = float(str(said)[:MAX_SAID])
            except ValueError:
                return None
            return f"{value:g}" if math.isfinite(value) and self.low <= value <= self.high else None
        said = str(said)
        return said if any(c.id == said for c in self.choices) else None

    def is_right(self, said: str) -> bool:
        if self.kind == NUMBER:
            return abs(float(said) - float(self.truth)) <= self.tolerance
        return said == self.truth

    def label_of(self, said: str) -> str:
        """How an answer reads on screen: its choice's label, or the number."""
        if self.kind == NUMBER:
            return said
        return next((c.label for c in self.choices if c.id == said), said)

    def truth_label(self) -> str:
        return self.label_of(self.shown_truth())

    def shown_truth(self) -> str:
        """The truth as an answer is kept (a number at the precision its tolerance asks)."""
        if self.kind != NUMBER:
            return str(self.truth)
        digits = max(0, -math.floor(math.log10(self.tolerance))) if self.tolerance > 0 else 2
        return f"{round(float(self.truth), digits):g}"


def unasked(text: str, said: str) -> Question:
    """A question this view cannot ask (the step's setup changed, no model): the reveal says why."""
    return Question(text, NONE, lambda host: said)


def token_choices(tokens: Sequence[str], literal: Callable[[str], str]) -> tuple[Choice, ...]:
    """A TOKEN question's choices: each position of the input, labelled with its token (and its position where a
    token occurs twice)."""
    counts = {t: list(tokens).count(t) for t in tokens}
    return tuple(Choice(str(i), literal(t) if counts[t] == 1 else f"{literal(t)} ({i})") for i, t in enumerate(tokens))


def head_choices(layers: int, heads: int, text: Callable[..., str]) -> tuple[Choice, ...]:
    """A choice of one head among `layers` × `heads` (ids "L.H", from 1)."""
    return tuple(Choice(f"{layer + 1}.{head + 1}", text("layer_head", layer=layer + 1, head=head + 1))
                 for layer in range(layers) for head in range(heads))


def distribution(question: Question, answers: Sequence[str]) -> dict[str, int]:
    """How many gave each answer: per choice id in the question's order (every choice, 0 too), or per number
    as given (NUMBER). Answers that are not this question's are left out."""
    read = [a for a in (question.read(answer) for answer in answers) if a is not None]
    if question.kind == NUMBER:
        counts: dict[str, int] = {}
        for said in sorted(read, key=float):
            counts[said] = counts.get(said, 0) + 1
        return counts
    return {c.id: read.count(c.id) for c in question.choices}


def share_right(question: Question, answers: Sequence[str]) -> float | None:
    """The share of the answers that are right (None: nobody answered)."""
    read = [a for a in (question.read(answer) for answer in answers) if a is not None]
    return float(np.mean([question.is_right(a) for a in read])) if read else None


@dataclass
class Asked:
    """The questions a session was asked, by key (the exit ticket draws from them), oldest first."""

    questions: dict[str, Question] = field(default_factory=dict)

    def note(self, key: str, question: Question) -> None:
        self.questions.pop(key, None)
        self.questions[key] = question
