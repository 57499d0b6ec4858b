"""English -> Chinese, a toy grammar where whole phrases move.

- Time phrases move from the end to right after the subject, and place phrases to
  before the verb: "he ate an apple at school yesterday" -> 他 昨天 在 学校 吃 了 一 个 苹果.
- Every counted noun needs a measure word chosen by the noun: 一 个 苹果, 一 本 书, 一 杯 茶.
- Tense is not a verb ending: past adds 了 (or 没 when negated), future adds 会.
- Chinese is written without spaces, so `join` glues the words together and
  `split_target` cuts them apart again by longest match against the vocabulary.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from transformer_viz.data.tasks.base import TrainDefaults
from transformer_viz.data.tasks.translation import Rendering, TranslationTask, Words, max_match
from transformer_viz.data.vocab import Vocab

SUBJECT_NOUNS = {"boy": "男孩", "girl": "女孩", "teacher": "老师", "student": "学生", "friend": "朋友",
                 "mother": "妈妈", "father": "爸爸"}
SUBJECT_PRONOUNS = {"he": "他", "she": "她"}
# singular -> (plural, Chinese, measure word)
THINGS = {"apple": ("apples", "苹果", "个"), "banana": ("bananas", "香蕉", "根"), "cake": ("cakes", "蛋糕", "块"),
          "book": ("books", "书", "本"), "letter": ("letters", "信", "封"), "newspaper": ("newspapers", "报纸", "份"),
          "car": ("cars", "车", "辆"), "pen": ("pens", "笔", "支")}
# drinks come in a container: "a cup of tea" -> 一 杯 茶 (the container is the measure word)
CONTAINERS = {"cup": ("cups", "杯"), "glass": ("glasses", "杯"), "bottle": ("bottles", "瓶")}
DRINKS = {"tea": "茶", "coffee": "咖啡", "milk": "牛奶", "water": "水"}
QUANTITIES = {"a": "一", "two": "两", "three": "三"}
# base -> (3rd person present, past, Chinese, possible objects; "drink" = container of a drink)
VERBS = {
    "eat": ("eats", "ate", "吃", ("apple", "banana", "cake")),
    "read": ("reads", "read", "看", ("book", "letter", "newspaper")),
    "write": ("writes", "wrote", "写", ("letter", "book")),
    "buy": ("buys", "bought", "买", (*THINGS, "drink")),
    "drink": ("drinks", "drank", "喝", ("drink",)),
}
# (preposition, has "the", noun) -> Chinese noun, always after 在
PLACES = {("at", False, "school"): "学校", ("at", False, "home"): "家", ("in", True, "park"): "公园",
          ("in", True, "library"): "图书馆", ("at", True, "store"): "商店"}
# English words -> (Chinese, tenses it fits)
TIMES = {("yesterday",): ("昨天", ("past",)), ("last", "night"): ("昨晚", ("past",)),
         ("today",): ("今天", ("past", "present", "future")), ("tomorrow",): ("明天", ("future",)),
         ("every", "day"): ("每天", ("present",)), ("on", "sunday"): ("星期天", ("past", "future"))}
TENSES = ("present", "past", "future")


@dataclass(frozen=True)
class Thing:
    """A counted object: "two books" (container None) or "a cup of tea" (noun is the drink)."""

    quantity: str
    noun: str
    container: str | None = None


@dataclass(frozen=True)
class Sentence:
    subject_det: str | None  # "the", "my", or None for he / she
    subject: str
    verb: str
    tense: str
    negated: bool
    obj: Thing
    place: tuple[str, bool, str] | None
    time: tuple[str, ...] | None


def english_words() -> list[str]:
    words = ["the", "my", *SUBJECT_NOUNS, *SUBJECT_PRONOUNS, "does", "did", "will", "not"]
    for base, (present, past, _, _) in VERBS.items():
        words += [present, past, base]
    words += [*QUANTITIES, "an"]
    for singular, (plural, *_) in {**THINGS, **CONTAINERS}.items():
        words += [singular, plural]
    words += ["of", *DRINKS]
    for prep, _, noun in PLACES:
        words += [prep, noun]
    return words + [word for time in TIMES for word in time]


def chinese_words() -> list[str]:
    words = ["我", "的", *SUBJECT_NOUNS.values(), *SUBJECT_PRONOUNS.values()]
    words += [chinese for chinese, _ in TIMES.values()] + ["不", "没", "会", "在", *PLACES.values()]
    words += [chinese for _, _, chinese, _ in VERBS.values()] + ["了", *QUANTITIES.values()]
    words += [measure for _, _, measure in THINGS.values()] + [measure for _, measure in CONTAINERS.values()]
    return words + [chinese for _, chinese, _ in THINGS.values()] + list(DRINKS.values())


class EnglishChinese(TranslationTask):
    name = "en-zh"
    title = "English → Chinese"
    description = "Translate simple sentences: time and place move before the verb, measure words, 了 and 会."
    max_input_len = 14
    max_target_len = 12
    examples = (
        "he ate an apple at school yesterday",
        "my mother drinks a cup of tea at home every day",
        "the teacher will not read two books in the library tomorrow",
        "she bought three pens",
    )
    train_defaults = TrainDefaults(steps=2500, batch_size=64, lr=2e-3, warmup=100)
    model_defaults = MappingProxyType({"dropout": 0.1})
    src_vocab = Vocab.from_tokens(english_words())
    tgt_vocab = Vocab.from_tokens(chinese_words())

    def split_target(self, text: str) -> list[str]:
        return max_match(text, self.target_words)

    def join(self, tokens: Sequence[str]) -> str:
        return "".join(tokens)

    def sample_meaning(self, rng: random.Random) -> Sentence:
        if rng.random() < 0.25:
            det, subject = None, rng.choice(tuple(SUBJECT_PRONOUNS))
        else:
            det, subject = rng.choice(("the", "my")), rng.choice(tuple(SUBJECT_NOUNS))
        verb = rng.choice(tuple(VERBS))
        tense = rng.choice(TENSES)
        noun = rng.choice(VERBS[verb][3])
        container = None
        if noun == "drink":
            noun, container = rng.choice(tuple(DRINKS)), rng.choice(tuple(CONTAINERS))
        obj = Thing(rng.choice(tuple(QUANTITIES)), noun, container)
        place = rng.choice(tuple(PLACES)) if rng.random() < 0.5 else None
        times = [time for time, (_, tenses) in TIMES.items() if tense in tenses]
        time = rng.choice(times) if rng.random() < 0.6 else None
        return Sentence(det, subject, verb, tense, rng.random() < 0.25, obj, place, time)

    def render(self, s: Sentence) -> Rendering:
        out = Rendering()
        present, past, chinese_verb, _ = VERBS[s.verb]
        # English: subject, verb group, object, [place], [time]
        if s.subject_det:
            out.source(s.subject_det, "det")
        out.source(s.subject, "subject")
        if s.negated:
            out.source({"present": "does", "past": "did", "future": "will"}[s.tense], "aux")
            out.source("not", "not")
            out.source(s.verb, "verb")
        elif s.tense == "future":
            out.source("will", "aux")
            out.source(s.verb, "verb")
        else:
            out.source(present if s.tense == "present" else past, "verb")
        self._render_english_object(out, s.obj)
        if s.place:
            prep, has_the, noun = s.place
            out.source(prep, "prep")
            if has_the:
                out.source("the", "place.the")
            out.source(noun, "place")
        for k, word in enumerate(s.time or ()):
            out.source(word, f"time.{k}")
        # Chinese: subject, [time], [不/没], [会], [在 place], verb, [了], object
        if s.subject_det == "my":
            out.target("我", "det")
            out.target("的", "det")
        out.target(SUBJECT_PRONOUNS.get(s.subject) or SUBJECT_NOUNS[s.subject], "subject")
        if s.time:
            out.target(TIMES[s.time][0], *(f"time.{k}" for k in range(len(s.time))))
        if s.negated:
            out.target("没" if s.tense == "past" else "不", "not", *(["aux"] if s.tense == "past" else []))
        if s.tense == "future":
            out.target("会", "aux")
        if s.place:
            out.target("在", "prep")
            out.target(PLACES[s.place], "place")
        out.target(chinese_verb, "verb")
        if s.tense == "past" and not s.negated:
            out.target("了", "verb")
        out.target(QUANTITIES[s.obj.quantity], "quantity")
        if s.obj.container:
            out.target(CONTAINERS[s.obj.container][1], "container")
        else:
            out.target(THINGS[s.obj.noun][2], "quantity", "object")
        out.target(DRINKS[s.obj.noun] if s.obj.container else THINGS[s.obj.noun][1], "object")
        return out

    @staticmethod
    def _render_english_object(out: Rendering, obj: Thing) -> None:
        plural = obj.quantity != "a"
        head = obj.container or obj.noun
        forms = CONTAINERS[head][0] if obj.container else THINGS[head][0]
        out.source("an" if obj.quantity == "a" and head[0] in "aeiou" else obj.quantity, "quantity")
        if obj.container:
            out.source(forms if plural else head, "container")
            out.source("of", "of")
            out.source(obj.noun, "object")
        else:
            out.source(forms if plural else head, "object")

    def parse(self, words: Sequence[str]) -> Sentence:
        w = Words(words)
        if w.peek() in SUBJECT_PRONOUNS:
            det, subject = None, w.take(SUBJECT_PRONOUNS, "he or she")
        else:
            det = w.take(("the", "my"), "'the', 'my', 'he' or 'she'")
            subject = w.take(SUBJECT_NOUNS, "a person such as 'boy' or 'teacher'")
        presents = {forms[0]: base for base, forms in VERBS.items()}
        pasts = {forms[1]: base for base, forms in VERBS.items()}
        auxiliaries = {"does": "present", "did": "past", "will": "future"}
        if w.peek() in auxiliaries:
            tense = auxiliaries[w.take(auxiliaries, "does, did or will")]
            negated = w.accept("not")
            if not negated and tense != "future":
                raise ValueError("'does' and 'did' need 'not' in this grammar: say 'eats' or 'ate'.")
            verb = w.take(VERBS, "a verb such as 'eat'")
        else:
            word = w.take(set(presents) | set(pasts), "a verb such as 'eats' or 'ate'")
            verb, tense, negated = (pasts[word], "past", False) if word in pasts else (presents[word], "present", False)
        quantity = w.take({*QUANTITIES, "an"}, "a, an, two or three")
        quantity = "a" if quantity == "an" else quantity
        plurals = {forms[0]: singular for singular, forms in {**THINGS, **CONTAINERS}.items()}
        head = w.take({*THINGS, *CONTAINERS, *plurals}, "a thing such as 'apple' or 'cup'")
        head = plurals.get(head, head)
        if head in CONTAINERS:
            w.take(("of",), f"'of' after '{head}'")
            obj = Thing(quantity, w.take(DRINKS, "a drink such as 'tea'"), head)
        else:
            obj = Thing(quantity, head)
        place = None
        if w.peek() in ("at", "in"):
            prep = w.take(("at", "in"), "at or in")
            has_the = w.accept("the")
            place = (prep, has_the, w.take({noun for _, _, noun in PLACES}, "a place such as 'school'"))
            if place not in PLACES:
                raise ValueError(f"This grammar says {self._place_text(place)} differently.")
        time = None
        for candidate in TIMES:
            if tuple(w.words[w.position:]) == candidate:
                time, w.position = candidate, len(w.words)
        if not w.done():
            raise ValueError(f"Unexpected '{w.peek()}': this sentence is outside the task's grammar.")
        return Sentence(det, subject, verb, tense, negated, obj, place, time)

    @staticmethod
    def _place_text(place: tuple[str, bool, str]) -> str:
        prep, has_the, noun = place
        right = next(p for p in PLACES if p[2] == noun)
        return f"'{prep} {'the ' if has_the else ''}{noun}' (it is '{right[0]} {'the ' if right[1] else ''}{noun}')"


EN_ZH = EnglishChinese()
