"""What the toy translation tasks share: a synchronous grammar, a fixed corpus and word alignments.

Each sentence is built from a small "meaning" (who does what to whom, when). The same
meaning is rendered in both languages at once, and every target word records which
source words it translates, which gives the gold word alignment for free. A parser
reads an English sentence back into its meaning, so `target(text)` works for any
sentence of the grammar, not only for the ones in the corpus.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import cached_property

from transformer_viz.data.tasks.base import Task
from transformer_viz.data.vocab import Vocab


class Rendering:
    """A sentence pair under construction: source words with keys, target words with the keys they translate."""

    def __init__(self) -> None:
        self.src: list[str] = []
        self.tgt: list[str] = []
        self._src_position: dict[str, int] = {}
        self._links: list[tuple[str, int]] = []

    def source(self, word: str, key: str) -> None:
        """Append a source word; `key` names its role, e.g. "subject.noun"."""
        self._src_position[key] = len(self.src)
        self.src.append(word)

    def target(self, word: str, *keys: str) -> None:
        """Append a target word aligned to the source words with these keys (none: unaligned)."""
        for key in keys:
            self._links.append((key, len(self.tgt)))
        self.tgt.append(word)

    def pairs(self) -> list[tuple[int, int]]:
        """Gold pairs (source position, target position), sorted."""
        return sorted((self._src_position[key], j) for key, j in self._links if key in self._src_position)


class Words:
    """A cursor over the words of a sentence being parsed; errors name the word that did not fit."""

    def __init__(self, words: Sequence[str]) -> None:
        self.words, self.position = list(words), 0

    def peek(self) -> str | None:
        return self.words[self.position] if self.position < len(self.words) else None

    def take(self, allowed, what: str) -> str:
        """Consume the next word if it is in `allowed`, else raise ValueError saying `what` was expected."""
        word = self.peek()
        if word is None or word not in allowed:
            found = "the end of the sentence" if word is None else f"'{word}'"
            raise ValueError(f"Expected {what} but found {found}: this sentence is outside the task's grammar.")
        self.position += 1
        return word

    def accept(self, word: str) -> bool:
        """Consume the next word if it is `word`."""
        if self.peek() == word:
            self.position += 1
            return True
        return False

    def done(self) -> bool:
        return self.position == len(self.words)


class TranslationTask(Task):
    """A word-level task whose pairs come from a grammar (subclasses: sample, render, parse).

    The model trains on a fixed corpus of `corpus_size` distinct sentences drawn with
    `corpus_seed`; held-out sentences are grammatical sentences outside that corpus.
    """

    level = "word"
    corpus_size = 4000
    corpus_seed = 2024

    def sample_meaning(self, rng: random.Random):
        raise NotImplementedError

    def render(self, meaning) -> Rendering:
        raise NotImplementedError

    def parse(self, words: Sequence[str]):
        """English words -> meaning; ValueError for a sentence outside the grammar."""
        raise NotImplementedError

    # --- Task interface --------------------------------------------------------------------

    def split(self, text: str) -> list[str]:
        """Lower-cased words; a final full stop, question or exclamation mark is dropped."""
        return text.strip().lower().rstrip(".!?").split()

    def join(self, tokens: Sequence[str]) -> str:
        return " ".join(tokens)

    def gold(self, tokens: Sequence[str]) -> tuple[list[str], list[tuple[int, int]]]:
        pair = self.render(self.parse(tokens))
        return pair.tgt, pair.pairs()

    def sample_input(self, rng: random.Random) -> str:
        return " ".join(self.render(self.sample_meaning(rng)).src)

    def training_inputs(self) -> tuple[str, ...]:
        return self.corpus

    @cached_property
    def corpus(self) -> tuple[str, ...]:
        """The fixed training sentences: `corpus_size` distinct samples (same every run)."""
        rng = random.Random(self.corpus_seed)
        sentences: dict[str, None] = {}
        while len(sentences) < self.corpus_size:
            sentences[self.sample_input(rng)] = None
        return tuple(sentences)

    @cached_property
    def _corpus_set(self) -> frozenset[str]:
        return frozenset(self.corpus)

    def heldout_input(self, rng: random.Random) -> str:
        while True:
            text = self.sample_input(rng)
            if text not in self._corpus_set:
                return text

    @property
    def target_words(self) -> tuple[str, ...]:
        return self.tgt_vocab.tokens[len(Vocab.SPECIALS):]


def max_match(text: str, words: Sequence[str]) -> list[str]:
    """Split text written without spaces into known words, longest match first (a classic
    way to segment Chinese). Spaces are also accepted as boundaries; a character that
    starts no known word becomes a token of its own (the vocabulary will read it as <unk>)."""
    known = set(words)
    longest = max((len(word) for word in known), default=1)
    tokens = []
    for chunk in re.split(r"\s+", text.strip()):
        position = 0
        while position < len(chunk):
            for size in range(min(longest, len(chunk) - position), 0, -1):
                piece = chunk[position: position + size]
                if piece in known or size == 1:
                    tokens.append(piece)
                    position += size
                    break
    return tokens
