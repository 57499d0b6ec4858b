"""Vocabularies, the toy tasks' ground truth and gold alignments, and the sequence format."""

import random

import pytest
import torch

from transformer_viz.data.tasks import (
    TASKS,
    encode_source,
    encode_target,
    get_task,
    max_match,
    model_config_for,
)
from transformer_viz.data.vocab import Vocab

CHAR_TASKS = [name for name, task in TASKS.items() if task.level == "char"]
WORD_TASKS = [name for name, task in TASKS.items() if task.level == "word"]


# --- Vocab ---------------------------------------------------------------------------------

def test_vocab_puts_the_specials_first_and_reads_unknown_tokens_as_unk():
    vocab = Vocab.from_tokens(["b", "a", "b", "<eos>"])
    assert vocab.tokens == ("<pad>", "<bos>", "<eos>", "<unk>", "b", "a")
    assert (vocab.pad_id, vocab.bos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2, 3)
    assert len(vocab) == 6
    assert vocab.encode(["a", "z", "b"]) == [5, 3, 4]
    assert vocab.index("zebra") == vocab.unk_id
    assert vocab.decode([1, 5, 2]) == ["<bos>", "a", "<eos>"]
    assert vocab.is_special("<unk>") and not vocab.is_special("a")
    assert "a" in vocab and "z" not in vocab


def test_vocab_json_round_trip_and_validation():
    vocab = Vocab.from_tokens("xyz")
    assert Vocab.from_json(vocab.to_json()) == vocab
    assert hash(Vocab.from_json(vocab.to_json())) == hash(vocab)
    with pytest.raises(ValueError, match="special"):
        Vocab(("a", "b"))
    with pytest.raises(ValueError, match="repeated: a"):
        Vocab((*Vocab.SPECIALS, "a", "a"))
    with pytest.raises(ValueError, match="outside"):
        vocab.decode([99])
    with pytest.raises(ValueError, match="tokens"):
        Vocab.from_dict({"words": []})


# --- registry ------------------------------------------------------------------------------

def test_registry_lists_every_task_and_explains_unknown_names():
    assert {"copy", "reverse", "sort", "rotate", "en-fr", "en-zh"} <= set(TASKS)
    assert get_task("reverse") is TASKS["reverse"]
    with pytest.raises(ValueError, match="copy, reverse"):
        get_task("revers")


@pytest.mark.parametrize("name", list(TASKS))
def test_every_task_is_complete(name):
    task = get_task(name)
    assert task.name == name and task.title and task.level in ("char", "word")
    assert 3 <= len(task.examples) <= 5
    assert task.max_len == max(task.max_input_len, task.max_target_len) + 1
    assert task.src_vocab.tokens[:4] == Vocab.SPECIALS and task.tgt_vocab.tokens[:4] == Vocab.SPECIALS
    for example in task.examples:
        pieces = task.split(example)
        assert 1 <= len(pieces) <= task.max_input_len
        assert all(piece in task.src_vocab for piece in pieces)
        assert all(token in task.tgt_vocab for token in task.split_target(task.target(example)))
    if task.level == "char":
        assert task.alphabet and all(ch in task.src_vocab for ch in task.alphabet)


# --- algorithmic tasks ---------------------------------------------------------------------

@pytest.mark.parametrize(("name", "text", "answer"), [
    ("copy", "hello", "hello"), ("reverse", "hello", "olleh"), ("reverse", "stressed", "desserts"),
    ("sort", "banana", "aaabnn"), ("sort", "hello", "ehllo"), ("rotate", "hello", "llohe"),
    ("rotate", "ab", "ab"), ("rotate", "x", "x"), ("reverse", "  Hello ", "olleh"),
])
def test_char_task_targets(name, text, answer):
    assert get_task(name).target(text) == answer


def test_char_task_alignments():
    assert get_task("copy").alignment(list("abc"), list("abc")) == [(0, 0), (1, 1), (2, 2)]
    assert get_task("reverse").alignment(list("abcd"), list("dcba")) == [(3, 0), (2, 1), (1, 2), (0, 3)]
    # stable: the three a's of "banana" (positions 1, 3, 5) keep their order
    assert get_task("sort").alignment(list("banana"), list("aaabnn")) == [
        (1, 0), (3, 1), (5, 2), (0, 3), (2, 4), (4, 5)]
    assert get_task("rotate").alignment(list("abcde"), list("cdeab")) == [(2, 0), (3, 1), (4, 2), (0, 3), (1, 4)]


def test_alignment_ignores_special_tokens_and_truncates_to_the_output():
    reverse = get_task("reverse")
    assert reverse.alignment(["a", "b", "c", "<eos>"], ["<bos>", "c", "b", "a"]) == [(2, 0), (1, 1), (0, 2)]
    assert reverse.alignment(list("abc"), list("c")) == [(2, 0)]
    assert reverse.alignment(["<eos>"], ["<bos>"]) == []


@pytest.mark.parametrize("name", CHAR_TASKS)
def test_char_alignment_pairs_each_output_with_the_input_letter_it_copies(name):
    task, rng = get_task(name), random.Random(3)
    for _ in range(200):
        src = task.split(task.sample_input(rng))
        tgt, pairs = task.gold(src)
        assert sorted(j for _, j in pairs) == list(range(len(tgt)))
        assert sorted(i for i, _ in pairs) == list(range(len(src)))
        assert all(src[i] == tgt[j] for i, j in pairs)


@pytest.mark.parametrize("name", CHAR_TASKS)
def test_char_samples_cover_every_length(name):
    task, rng = get_task(name), random.Random(0)
    lengths = {len(task.sample_input(rng)) for _ in range(500)}
    assert lengths == set(range(1, task.max_input_len + 1))
    assert task.training_inputs() is None


# --- translation tasks ---------------------------------------------------------------------

def test_english_french_reorders_adjectives_and_agrees_in_gender():
    task = get_task("en-fr")
    assert task.target("The black cat sees the small dog.") == "le chat noir voit le petit chien"
    assert task.target("a big girl ate a white cake") == "une grande fille a mangé un gâteau blanc"
    assert task.target("my dog will not see her") == "mon chien ne la verra pas"
    # black (1) <-> noir (2) and cat (2) <-> chat (1) cross
    src, tgt = task.split("the black cat sees the small dog"), task.split("le chat noir voit le petit chien")
    assert task.alignment(src, tgt) == [(0, 0), (1, 2), (2, 1), (3, 3), (4, 4), (5, 5), (6, 6)]
    # one word -> two ("saw" -> "a vu"), two -> one ("will see" -> "verra"), "not" -> "ne ... pas"
    assert task.gold(task.split("the boy saw a cat"))[1] == [(0, 0), (1, 1), (2, 2), (2, 3), (3, 4), (4, 5)]
    assert task.gold(task.split("the boy will see her"))[1] == [(0, 0), (1, 1), (2, 3), (3, 3), (4, 2)]
    assert task.gold(task.split("the boy does not see her"))[1] == [(0, 0), (1, 1), (3, 2), (3, 5), (4, 4), (5, 3)]


def test_english_chinese_moves_time_and_place_before_the_verb():
    task = get_task("en-zh")
    assert task.target("he ate an apple at school yesterday") == "他昨天在学校吃了一个苹果"
    assert task.target("my mother will not drink two cups of tea") == "我的妈妈不会喝两杯茶"
    assert task.target("she did not read a book on sunday") == "她星期天没看一本书"
    pairs = task.gold(task.split("he ate an apple at school yesterday"))[1]
    assert (6, 1) in pairs  # yesterday -> 昨天, from the end to second place
    assert (4, 2) in pairs and (5, 3) in pairs  # at school -> 在 学校, before the verb
    assert (1, 4) in pairs and (1, 5) in pairs  # ate -> 吃 了


@pytest.mark.parametrize("name", WORD_TASKS)
def test_translation_corpus_is_fixed_in_vocabulary_and_within_the_length_limits(name):
    task = get_task(name)
    corpus = task.training_inputs()
    assert 2000 <= len(corpus) == len(set(corpus)) <= 10000
    assert corpus[:5] == type(task)().training_inputs()[:5]  # the same sentences every run
    for text in corpus:
        src = task.split(text)
        tgt, pairs = task.gold(src)
        assert len(src) <= task.max_input_len and len(tgt) <= task.max_target_len
        assert all(word in task.src_vocab for word in src) and all(word in task.tgt_vocab for word in tgt)
        assert all(0 <= i < len(src) and 0 <= j < len(tgt) for i, j in pairs)
        assert task.split_target(task.join(tgt)) == tgt


@pytest.mark.parametrize("name", WORD_TASKS)
def test_parsing_a_rendered_sentence_gives_back_its_meaning(name):
    task, rng = get_task(name), random.Random(7)
    for _ in range(300):
        meaning = task.sample_meaning(rng)
        assert task.parse(task.render(meaning).src) == meaning


@pytest.mark.parametrize("name", WORD_TASKS)
def test_heldout_sentences_are_outside_the_training_corpus(name):
    task, rng = get_task(name), random.Random(11)
    corpus = set(task.training_inputs())
    heldout = [task.heldout_input(rng) for _ in range(200)]
    assert not corpus & set(heldout)
    assert len(set(heldout)) > 150


@pytest.mark.parametrize(("name", "text"), [
    ("en-fr", "the cat sees"), ("en-fr", "the cat sees the dog quickly"), ("en-fr", "the boy saw her"),
    ("en-zh", "he eat an apple"), ("en-zh", "he ate an apple in school"),
])
def test_sentences_outside_the_grammar_have_no_target_and_no_alignment(name, text):
    task = get_task(name)
    with pytest.raises(ValueError, match=r"grammar|differently"):
        task.target(text)
    assert task.alignment(task.split(text), ["x"]) == []


def test_max_match_segments_chinese_without_spaces():
    assert max_match("他在图书馆看书", ["他", "在", "图书馆", "书", "看"]) == ["他", "在", "图书馆", "看", "书"]
    assert max_match("他 吃", ["他", "吃"]) == ["他", "吃"]
    assert max_match("他X", ["他"]) == ["他", "X"]


# --- sequence format -----------------------------------------------------------------------

def test_encode_source_appends_eos_and_flags_unknown_tokens_without_raising():
    task = get_task("reverse")
    src = encode_source(task, "ab1c")
    assert src.ids.dtype == torch.int64 and src.ids.shape == (1, 5)
    assert src.tokens == ("a", "b", "<unk>", "c", "<eos>")
    assert src.ids[0, 2].item() == Vocab.unk_id and src.ids[0, -1].item() == Vocab.eos_id
    assert src.unknown == ("1",) and src.pieces == ("a", "b", "1", "c")
    words = encode_source(get_task("en-fr"), "the purple cat sees the dog")
    assert words.unknown == ("purple",) and words.tokens[1] == "<unk>"


def test_encode_target_starts_with_bos_and_its_labels_end_with_eos():
    task = get_task("en-zh")
    tgt = encode_target(task, "他吃了一个苹果")
    assert tgt.tokens == ("<bos>", "他", "吃", "了", "一", "个", "苹果")
    assert tgt.ids[0, 0].item() == Vocab.bos_id
    assert tgt.labels[0, :-1].tolist() == tgt.ids[0, 1:].tolist() and tgt.labels[0, -1].item() == Vocab.eos_id


@pytest.mark.parametrize("encode", [encode_source, encode_target])
def test_empty_or_too_long_text_is_refused_with_a_readable_sentence(encode):
    task = get_task("copy")
    with pytest.raises(ValueError, match="empty: type at least one character"):
        encode(task, "   ")
    with pytest.raises(ValueError, match="13 characters, but the copy task reads at most 12"):
        encode(task, "a" * 13)
    with pytest.raises(ValueError, match="at most 4 characters"):
        encode(task, "abcdef", max_len=5)
    with pytest.raises(ValueError, match="words"):
        encode(get_task("en-fr"), "the " * 10)


def test_model_config_for_fits_the_task_and_accepts_shape_overrides():
    task = get_task("en-zh")
    config = model_config_for(task, d_model=32, n_heads=2, layers=3, positional="learned")
    assert (config.src_vocab_size, config.tgt_vocab_size) == (len(task.src_vocab), len(task.tgt_vocab))
    assert config.pad_id == Vocab.pad_id and config.max_len == task.max_len == 15
    assert (config.d_model, config.n_heads, config.n_encoder_layers, config.n_decoder_layers) == (32, 2, 3, 3)
    assert config.positional == "learned" and config.dropout == 0.1
    assert model_config_for(get_task("copy")).dropout == 0.0
    with pytest.raises(ValueError, match="come from the task"):
        model_config_for(task, src_vocab_size=5)
    with pytest.raises(ValueError, match="too short"):
        model_config_for(task, max_len=8)
    with pytest.raises(ValueError, match="Unknown ModelConfig"):
        model_config_for(task, heads=2)


def test_a_model_longer_than_its_task_reads_up_to_its_own_max_len():
    task = get_task("reverse")
    long_text = "ab" * 15  # 30 letters: more than the task's 12
    with pytest.raises(ValueError, match="reverse task reads at most 12"):
        encode_source(task, long_text, max_len=task.max_len)
    assert encode_source(task, long_text, max_len=32).ids.shape == (1, 31)
    with pytest.raises(ValueError, match=r"this model \(max_len 32\) reads at most 31"):
        encode_source(task, "ab" * 16, max_len=32)


# --- refusing what is not text ---------------------------------------------------------------

@pytest.mark.parametrize("text", [5, None, b"abc", ["a", "b"]])
@pytest.mark.parametrize("name", ["copy", "en-zh"])
def test_text_that_is_not_a_string_is_a_value_error(name, text):
    task = get_task(name)
    with pytest.raises(ValueError, match=r"The input must be text \(a str\), got"):
        encode_source(task, text)
    with pytest.raises(ValueError, match=r"The target must be text \(a str\), got"):
        encode_target(task, text)


@pytest.mark.parametrize("max_len", ["13", 2.5, True, 0, -4])
def test_the_models_max_len_must_be_a_positive_whole_number(max_len):
    with pytest.raises(ValueError, match="max_len must be a positive whole number"):
        encode_source(get_task("copy"), "abc", max_len)


def test_a_task_name_is_not_a_task():
    with pytest.raises(ValueError, match=r"task must be a Task, such as get_task\('copy'\), got 'copy'"):
        encode_source("copy", "abc")


def test_weights_fit_a_config_whatever_its_mask_value_and_dropout_but_nothing_else():
    from dataclasses import replace

    from transformer_viz.config import fits
    from transformer_viz.data.tasks import default_config

    config = default_config(get_task("en-zh"))
    assert config == model_config_for(get_task("en-zh")) and default_config(get_task("en-zh")) is config
    assert fits(config, replace(config, mask_value=-1e4, dropout=0.0))
    for change in ({"d_model": 32}, {"n_heads": 2}, {"max_len": 16}, {"positional": "learned"}, {"norm_first": False},
                   {"scale_embeddings": True}, {"embed_norm": True}, {"n_decoder_layers": 1}):
        assert not fits(config, replace(config, **change)) and not fits(replace(config, **change), config)
