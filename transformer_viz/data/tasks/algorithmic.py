"""Character-level algorithmic tasks: copy, reverse, sort and rotate.

Each output is a rearrangement of the input's characters, so every output character
comes from exactly one input position. That position is the gold alignment, and a
trained model's cross-attention draws it: a diagonal for copy, an anti-diagonal for
reverse, a broken diagonal for rotate, a staircase for sort.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from transformer_viz.data.tasks.base import Task, TrainDefaults
from transformer_viz.data.vocab import Vocab

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
MAX_CHARS = 12


def copy_order(tokens: Sequence[str]) -> list[int]:
    """Output position j takes input position j."""
    return list(range(len(tokens)))


def reverse_order(tokens: Sequence[str]) -> list[int]:
    """Output position j takes input position n - 1 - j."""
    return list(range(len(tokens) - 1, -1, -1))


def sort_order(tokens: Sequence[str]) -> list[int]:
    """Stable sort: equal characters keep their input order, so the mapping is unique."""
    return sorted(range(len(tokens)), key=lambda i: tokens[i])


def rotate_order(tokens: Sequence[str], shift: int = 2) -> list[int]:
    """Cyclic shift left by `shift`: output position j takes input position (j + shift) mod n."""
    n = len(tokens)
    return [(j + shift) % n for j in range(n)]


class CharTask(Task):
    """A task whose output is the input's characters in another order, given by `order(tokens)`."""

    level = "char"

    def __init__(self, name: str, title: str, description: str, order: Callable[[Sequence[str]], list[int]],
                 examples: tuple[str, ...], train_defaults: TrainDefaults,
                 alphabet: str = ALPHABET, max_input_len: int = MAX_CHARS) -> None:
        self.name, self.title, self.description = name, title, description
        self.order = order
        self.examples = examples
        self.train_defaults = train_defaults
        self.alphabet = alphabet
        self.max_input_len = self.max_target_len = max_input_len
        self.src_vocab = self.tgt_vocab = Vocab.from_tokens(alphabet)

    def split(self, text: str) -> list[str]:
        """One token per character; surrounding spaces are ignored, letters are lower-cased."""
        return list(text.strip().lower())

    def join(self, tokens: Sequence[str]) -> str:
        return "".join(tokens)

    def gold(self, tokens: Sequence[str]) -> tuple[list[str], list[tuple[int, int]]]:
        order = self.order(tokens)
        return [tokens[i] for i in order], [(i, j) for j, i in enumerate(order)]

    def sample_input(self, rng: random.Random) -> str:
        """A length drawn uniformly from 1..max_input_len, then uniform characters."""
        length = rng.randint(1, self.max_input_len)
        return "".join(rng.choice(self.alphabet) for _ in range(length))


def _defaults(steps: int) -> TrainDefaults:
    """The shipped models' training settings (bench/bench_train.py times "reverse" with them)."""
    return TrainDefaults(steps=steps, batch_size=64, lr=3e-3, warmup=100)


COPY = CharTask(
    "copy", "Copy the letters", "Write the input again, letter by letter.", copy_order,
    examples=("hello", "banana", "attention", "abcabc"), train_defaults=_defaults(1200),
)
REVERSE = CharTask(
    "reverse", "Reverse the letters", "Write the input backwards.", reverse_order,
    examples=("hello", "stressed", "banana", "racecar"), train_defaults=_defaults(1500),
)
SORT = CharTask(
    "sort", "Sort the letters", "Write the input's letters in alphabetical order (repeats kept).", sort_order,
    examples=("banana", "hello", "transformer", "zyxwvu"), train_defaults=_defaults(2500),
)
ROTATE = CharTask(
    "rotate", "Rotate by two", "Move the first two letters to the end (a cyclic shift).", rotate_order,
    examples=("hello", "abcdef", "banana", "rotate"), train_defaults=_defaults(1500),
)
