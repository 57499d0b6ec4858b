"""Byte-pair encoding (BPE), learned step by step so a lesson can show every merge.

Follows the subword scheme of Sennrich et al. (2016) as seed 003 works it through by hand:
each word of a counted corpus is split into characters plus an end-of-word symbol `</w>`;
the most frequent adjacent pair of symbols is merged into one new symbol, and again, for a
fixed number of merges. A new word is then segmented by replaying the merges in the order
they were learned. Pure Python: no dependency, no randomness.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise

END = "</w>"  # the end-of-word symbol: "st" ending a word is a different subword from "st" inside one

Pair = tuple[str, str]


def _check_word(word: str, what: str = "word") -> str:
    """`word` if BPE can split it: a non-empty str with no whitespace and no `</w>`; else ValueError."""
    if not isinstance(word, str) or not word:
        raise ValueError(f"A {what} must be a non-empty string, got {word!r}.")
    if any(character.isspace() for character in word):
        raise ValueError(f"A {what} must be a single word without spaces, got {word!r}.")
    if END in word:
        raise ValueError(f"A {what} cannot contain {END!r}: BPE adds that end-of-word symbol itself, got {word!r}.")
    return word


def _check_count(value: int, what: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{what} must be a whole number of at least {least}, got {value!r}.")
    return int(value)


def _merge_pair(symbols: list[str], left: str, right: str) -> list[str]:
    """`symbols` with every `left` directly followed by `right` joined into one symbol, read left to right.

    Overlaps resolve from the left, as a reader would: merging ("a", "a") turns a a a into aa a.
    """
    merged: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == left and symbols[i + 1] == right:
            merged.append(left + right)
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


def _count_pairs(symbols: Mapping[str, list[str]], word_counts: Mapping[str, int]) -> dict[Pair, int]:
    """How often each adjacent pair occurs: each occurrence inside a word counts that word's count.

    Keys come in reading order (words in corpus order, each left to right), which the tie rule uses.
    """
    counts: dict[Pair, int] = {}
    for word, word_symbols in symbols.items():
        for pair in pairwise(word_symbols):
            counts[pair] = counts.get(pair, 0) + word_counts[word]
    return counts


@dataclass(frozen=True)
class BytePairEncoding:
    """What `learn_bpe` learned, with the corpus it learned from, so any step can be shown again.

    word_counts: the corpus words (without `</w>`) and their counts, in the order given.
    merges: (left, right, count) in the order learned; count is the pair's count when it was merged.
    pair_order: every pair that ever occurred during learning, in the order first seen (the tie rule).
    """

    word_counts: tuple[tuple[str, int], ...]
    merges: tuple[tuple[str, str, int], ...]
    pair_order: tuple[Pair, ...]

    def _check_step(self, step: int) -> int:
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or not 0 <= step <= len(self.merges):
            raise ValueError(f"step must be a whole number from 0 to {len(self.merges)} (the merges learned), "
                             f"got {step!r}.")
        return int(step)

    def symbols_after(self, step: int) -> dict[str, list[str]]:
        """Each corpus word (in corpus order) as its symbols after the first `step` merges, `</w>` last."""
        step = self._check_step(step)
        symbols = {word: [*word, END] for word, _ in self.word_counts}
        for left, right, _ in self.merges[:step]:
            symbols = {word: _merge_pair(word_symbols, left, right) for word, word_symbols in symbols.items()}
        return symbols

    def pair_counts_after(self, step: int) -> list[tuple[str, str, int]]:
        """The adjacent pairs after `step` merges as (left, right, count), the next merge first.

        Sorted by count, highest first, then by the tie rule (the pair seen first). So
        `pair_counts_after(k)[0] == merges[k]` for every k < len(merges).
        """
        counts = _count_pairs(self.symbols_after(step), dict(self.word_counts))
        seen = {pair: number for number, pair in enumerate(self.pair_order)}
        ranked = sorted(counts.items(), key=lambda item: (-item[1], seen[item[0]]))
        return [(left, right, count) for (left, right), count in ranked]

    def segment(self, word: str) -> list[str]:
        """`word` split into learned subwords: its characters and `</w>`, then every merge in the order learned.

        A character the corpus never had stays a symbol of its own.
        """
        symbols = [*_check_word(word), END]
        for left, right, _ in self.merges:
            symbols = _merge_pair(symbols, left, right)
        return symbols


def learn_bpe(word_counts: Mapping[str, int], merges: int) -> BytePairEncoding:
    """Learn up to `merges` BPE merges from a corpus of words and their counts (seed 003's worked example).

    word_counts: word -> how often it occurs, e.g. {"yes": 7, "highest": 3, "high": 9}; words come
    without the end marker, `</w>` is added as each word's last symbol.

    Each step counts every adjacent pair of symbols (a pair inside a word counts that word's count)
    and merges the pair with the highest count everywhere. Tie rule: among pairs with the highest
    count, the one seen first wins. Pairs are numbered the first time they occur: at the start by
    reading the words in the order given, each left to right; pairs that a merge creates are then
    numbered after every pair seen before, again in reading order. So an older pair beats one that
    a merge has just made, which is how the seed goes from h+i to g+h (not hi+g) and then to hi+gh.

    A pair that occurs only once is still merged (as in Hugging Face's trainer by default).
    Learning stops early only when no pair is left: every word has become a single symbol.
    Every step re-counts the whole corpus, as one does by hand: meant for lesson-sized corpora.
    """
    if not isinstance(word_counts, Mapping):
        raise ValueError(f"word_counts must be a dict of word -> count, got a {type(word_counts).__name__}.")
    if not word_counts:
        raise ValueError("word_counts is empty: BPE needs at least one word to learn from.")
    corpus = {_check_word(word, "corpus word"): _check_count(count, f"The count of {word!r}", 1)
              for word, count in word_counts.items()}
    n_merges = _check_count(merges, "merges", 0)
    symbols = {word: [*word, END] for word in corpus}
    seen: dict[Pair, None] = {}  # insertion-ordered: the pairs in the order first seen
    learned: list[tuple[str, str, int]] = []
    while True:
        counts = _count_pairs(symbols, corpus)
        seen.update(dict.fromkeys(counts))  # a pair seen before keeps its place
        if len(learned) == n_merges or not counts:
            break
        best = max(counts.values())
        left, right = next(pair for pair in seen if counts.get(pair) == best)
        learned.append((left, right, best))
        symbols = {word: _merge_pair(word_symbols, left, right) for word, word_symbols in symbols.items()}
    return BytePairEncoding(tuple(corpus.items()), tuple(learned), tuple(seen))
