"""BPE (transformer_viz.data.bpe): seed 003's worked example, edge cases, and Hugging Face's trainer."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_viz import learn_bpe
from transformer_viz.data.bpe import END

try:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
except ImportError:
    Tokenizer = None
needs_hf = pytest.mark.skipif(Tokenizer is None, reason="Hugging Face `tokenizers` is not installed "
                                                        "(pip install -r requirements-dev.txt)")

SEED = {"yes": 7, "highest": 3, "high": 9}  # seed 003's corpus


def test_seed_first_pair_counts():
    # h-i, i-g and g-h tie at 12; among them, and among the 7s and the 3s, reading order decides
    assert learn_bpe(SEED, 5).pair_counts_after(0) == [
        ("h", "i", 12), ("i", "g", 12), ("g", "h", 12), ("e", "s", 10), ("h", END, 9), ("y", "e", 7),
        ("s", END, 7), ("h", "e", 3), ("s", "t", 3), ("t", END, 3),
    ]


def test_seed_merges_in_the_seeds_order():
    # After h+i, g-h (seen at the start) and hi-g (just made) tie at 12: the older pair wins, as in the seed.
    # Re-reading the corpus afresh each step would merge hi+g here; HF's rule merges g+h first (see below).
    bpe = learn_bpe(SEED, 5)
    assert bpe.merges == (("h", "i", 12), ("g", "h", 12), ("hi", "gh", 12), ("e", "s", 10), ("high", END, 9))
    assert bpe.pair_counts_after(1)[:2] == [("g", "h", 12), ("hi", "g", 12)]


def test_seed_symbols_step_by_step():
    bpe = learn_bpe(SEED, 5)
    assert bpe.symbols_after(0)["high"] == ["h", "i", "g", "h", END]
    assert bpe.symbols_after(2)["highest"] == ["hi", "gh", "e", "s", "t", END]
    assert bpe.symbols_after(5) == {"yes": ["y", "es", END], "highest": ["high", "es", "t", END], "high": ["high</w>"]}
    # the seed's final vocabulary: the symbols still in use
    assert {s for symbols in bpe.symbols_after(5).values() for s in symbols} == {"y", "es", END, "high", "t",
                                                                                 "high</w>"}


def test_segment_unseen_words_with_the_seeds_merges():
    bpe = learn_bpe(SEED, 5)
    assert bpe.segment("higher") == ["high", "e", "r", END]
    assert bpe.segment("yesterday") == ["y", "es", "t", "e", "r", "d", "a", "y", END]
    assert bpe.segment("high") == ["high</w>"] and bpe.segment("highest") == ["high", "es", "t", END]
    assert bpe.segment("ghi") == ["g", "hi", END]  # merges apply in the order learned: h+i takes the h before g+h
    assert learn_bpe(SEED, 0).segment("high") == ["h", "i", "g", "h", END]


def test_the_pair_table_leads_with_the_next_merge():
    bpe = learn_bpe(SEED, 5)
    for k, merge in enumerate(bpe.merges):
        assert bpe.pair_counts_after(k)[0] == merge


def test_overlapping_pairs_count_twice_and_merge_from_the_left():
    bpe = learn_bpe({"aaa": 1}, 1)
    assert bpe.pair_counts_after(0) == [("a", "a", 2), ("a", END, 1)]
    assert bpe.symbols_after(1) == {"aaa": ["aa", "a", END]}
    assert bpe.segment("aaaaa") == ["aa", "aa", "a", END]


def test_pairs_seen_once_are_merged_and_learning_stops_when_no_pair_is_left():
    bpe = learn_bpe({"ab": 2, "a": 1}, 10)
    assert bpe.merges == (("a", "b", 2), ("ab", END, 2), ("a", END, 1))
    assert bpe.symbols_after(3) == {"ab": ["ab</w>"], "a": ["a</w>"]}
    assert bpe.pair_counts_after(3) == []


def test_learning_is_deterministic_and_hashable():
    assert learn_bpe(SEED, 4) == learn_bpe(dict(SEED), 4)
    assert hash(learn_bpe(SEED, 4)) == hash(learn_bpe(SEED, 4))  # usable as a cache key
    assert learn_bpe({"a": 1, "b": 1}, 2).merges == (("a", END, 1), ("b", END, 1))
    assert learn_bpe({"b": 1, "a": 1}, 2).merges == (("b", END, 1), ("a", END, 1))  # corpus order breaks the tie


@pytest.mark.parametrize(("word_counts", "merges", "message"), [
    ({}, 1, "empty"),
    ([("yes", 7)], 1, "dict of word -> count, got a list"),
    ({"yes": 0}, 1, "count of 'yes' must be a whole number of at least 1"),
    ({"yes": -2}, 1, "at least 1"),
    ({"yes": 2.5}, 1, "whole number"),
    ({"yes": True}, 1, "whole number"),
    ({"": 1}, 1, "non-empty string"),
    ({3: 1}, 1, "non-empty string"),
    ({"two words": 1}, 1, "without spaces"),
    ({"tab\there": 1}, 1, "without spaces"),
    ({"high</w>": 1}, 1, "cannot contain '</w>'"),
    (SEED, -1, "merges must be a whole number of at least 0"),
    (SEED, 1.5, "merges must be a whole number"),
    (SEED, "5", "merges must be a whole number"),
])
def test_learn_bpe_refuses_bad_input(word_counts, merges, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        learn_bpe(word_counts, merges)


@pytest.mark.parametrize("step", [-1, 6, 1.0, "1", True, None])
def test_steps_outside_the_learned_merges_are_refused(step):
    bpe = learn_bpe(SEED, 5)
    for method in (bpe.symbols_after, bpe.pair_counts_after):
        with pytest.raises(ValueError, match="step must be a whole number from 0 to 5"):
            method(step)


@pytest.mark.parametrize("word", ["", "high est", "high</w>", 7])
def test_segment_refuses_what_is_not_one_word(word):
    with pytest.raises(ValueError, match="word"):
        learn_bpe(SEED, 5).segment(word)


corpora = st.dictionaries(st.text(alphabet="abc", min_size=1, max_size=6), st.integers(1, 5), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None, database=None)
@given(corpora, st.integers(0, 12), st.text(alphabet="abcd", min_size=1, max_size=8))
def test_segments_spell_the_word_and_one_more_merge_extends_the_list(word_counts, k, word):
    fewer, more = learn_bpe(word_counts, k), learn_bpe(word_counts, k + 1)
    assert "".join(fewer.segment(word)) == word + END
    assert more.merges[:k] == fewer.merges
    assert len(more.merges) == len(fewer.merges) + 1 or not fewer.pair_counts_after(len(fewer.merges))
    # the corpus words segment as learning left them, and each table leads with the merge taken
    assert {w: more.segment(w) for w in word_counts} == more.symbols_after(len(more.merges))
    assert all(more.pair_counts_after(i)[0] == merge for i, merge in enumerate(more.merges))


# --- Hugging Face's BPE trainer -------------------------------------------------------------------------------
#
# HF's `end_of_word_suffix="</w>"` glues the marker onto a word's last character ("high" starts as h i g h</w>),
# while the seed, and learn_bpe, keep `</w>` as a symbol of its own (h i g h </w>). The two start from different
# symbols, so their merges differ from the first step (the test just below shows HF's starting symbols). To
# compare like with like, HF gets each word followed by MARK, a character the corpus never uses, which it keeps
# as a symbol of its own exactly like our `</w>`; MARK is read back as `</w>`.
#
# Both trainers merge, at every step, a pair with the highest count (each occurrence weighted by its word's
# count, overlapping occurrences included). While that pair is unique they must choose the same one and then
# rewrite the corpus the same way, so the merges and the segmentations agree. When several pairs share the
# highest count each library breaks the tie by its own rule: ours takes the pair seen first, HF the pair of
# smallest token ids (its ids number the alphabet in code-point order, then merged tokens in the order made:
# `Ord for Merge` in tokenizers/src/models/bpe/trainer.rs). From the first tie on, they may part ways (on the
# seed's corpus they do so at once), so the comparison stops there.

MARK = "_"

ENGLISH = """
A student who opens this page has typed a few words and wants to see how a tokenizer cuts them into pieces.
The method is old and simple. It starts with single letters and a marker for the end of each word, then it
counts which two neighbouring pieces appear together most often in the whole corpus, joins that pair into one
new piece, and counts again. After a handful of steps the common endings of English appear on their own: the
ending that closes a plural, the ending of a past tense, the ending of a gerund such as reading, writing,
counting, joining, learning and meaning. After more steps whole frequent words appear as single pieces, while
rare words stay split into the parts they share with other words. That is the point of the method: a model
with a small vocabulary can still spell every word it meets, because an unseen word is only a new arrangement
of pieces it already knows. The newer, the longer and the stranger the word, the more pieces it needs. Readers
of the paper often ask why the end marker matters. Without it the letters at the end of a word and the same
letters in the middle could not be told apart, so the pieces that end words would be mixed with the pieces that
start or continue them. With it, the tokenizer learns that an ending is an ending. The counting is weighted:
a word that occurs seven times contributes seven to every pair inside it, so the frequent words decide the first
merges and the rare ones only the late merges. When two pairs are equally frequent some rule must choose
between them, and different libraries choose differently, which is why two careful implementations can agree
for many steps and then part ways at the first tie. The student can watch this happen, step after step, and
then type a new word and see it split into the learned pieces, one merge at a time, in the order they were
learned, until no merge applies any more and the word is written in the pieces of the vocabulary.
"""
UNSEEN = ("tokenizers", "understanding", "rewriting", "students", "marking", "wonderful")


def english_corpus() -> dict[str, int]:
    """The distinct words of ENGLISH with counts from 1 to 1000 that spread the pair counts, so ties come late."""
    words = dict.fromkeys(re.findall(r"[a-z]+", ENGLISH.lower()))
    return {word: 1 + (i * 7919) % 1000 for i, word in enumerate(words)}


def hf_trained(word_counts: dict[str, int], vocab_size: int, **options):
    """A Hugging Face BPE tokenizer trained on every word `count` times, split on whitespace only."""
    tokenizer = Tokenizer(models.BPE(**options))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, **options)
    tokenizer.train_from_iterator([" ".join([word] * count) for word, count in word_counts.items()], trainer)
    return tokenizer


def hf_merges(tokenizer) -> list[tuple[str, str]]:
    """The merges in the order learned (older versions save each as "left right", newer as [left, right])."""
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]


def merges_before_the_first_tie(bpe) -> int:
    """The first step whose highest pair count is shared by two pairs (len(merges) if none is)."""
    tied = (k for k in range(len(bpe.merges)) if bpe.pair_counts_after(k)[1][2] == bpe.pair_counts_after(k)[0][2])
    return next(tied, len(bpe.merges))


def marked(word_counts: dict[str, int]) -> dict[str, int]:
    return {word + MARK: count for word, count in word_counts.items()}


def as_hf(symbol: str) -> str:
    return symbol.replace(END, MARK)


@needs_hf
def test_hugging_face_end_of_word_suffix_starts_from_other_symbols():
    alphabet = set("".join(SEED))
    tokenizer = hf_trained(SEED, len(alphabet) + 3, end_of_word_suffix=END)  # room for the glued letters only
    assert hf_merges(tokenizer) == []
    assert set(tokenizer.get_vocab()) == alphabet | {"s</w>", "t</w>", "h</w>"}  # no "</w>" alone


@needs_hf
def test_hugging_face_breaks_the_seeds_tie_by_its_own_rule():
    tokenizer = hf_trained(marked(SEED), len(set("".join(SEED)) | {MARK}) + 2)
    assert hf_merges(tokenizer) == [("g", "h"), ("h", "i")]  # g < h < i: the smallest ids first
    assert [merge[:2] for merge in learn_bpe(SEED, 2).merges] == [("h", "i"), ("g", "h")]


@needs_hf
def test_merges_and_segments_agree_with_hugging_face_until_the_first_tie():
    corpus = english_corpus()
    ours = learn_bpe(corpus, 200)
    untied = merges_before_the_first_tie(ours)
    assert 30 <= untied < len(ours.merges)  # enough agreement to mean something, and then a tie
    alphabet = {c for word in corpus for c in word} | {MARK}
    made = {left + right for left, right, _ in ours.merges[:untied]}  # two merges may make the same token
    tokenizer = hf_trained(marked(corpus), len(alphabet) + len(made))
    assert hf_merges(tokenizer) == [(as_hf(left), as_hf(right)) for left, right, _ in ours.merges[:untied]]
    bpe = learn_bpe(corpus, untied)
    assert not set(UNSEEN) & set(corpus) and all(set(word) <= alphabet for word in UNSEEN)
    for word in [*corpus, *UNSEEN]:
        assert [as_hf(s) for s in bpe.segment(word)] == tokenizer.encode(word + MARK).tokens, word
