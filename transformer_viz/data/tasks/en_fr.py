"""English -> French, a toy grammar with the reorderings a first lesson on attention needs.

- Determiners agree with the noun's gender: "the cat" -> "le chat", "the car" -> "la voiture".
- Colour adjectives move after the noun and agree with it: "the black car" -> "la voiture noire";
  "big" and "small" stay in front: "the big car" -> "la grande voiture".
- One English verb word can become two French words and back: "saw" -> "a vu",
  "will see" -> "verra"; negation wraps the verb: "does not see" -> "ne voit pas".
- Object pronouns jump in front of the verb: "the boy sees her" -> "le garçon la voit".
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from transformer_viz.data.tasks.base import TrainDefaults
from transformer_viz.data.tasks.translation import Rendering, TranslationTask, Words
from transformer_viz.data.vocab import Vocab

# English noun -> (French noun, gender)
NOUNS = {
    "cat": ("chat", "m"), "dog": ("chien", "m"), "horse": ("cheval", "m"), "boy": ("garçon", "m"),
    "girl": ("fille", "f"), "woman": ("femme", "f"), "car": ("voiture", "f"), "house": ("maison", "f"),
    "book": ("livre", "m"), "letter": ("lettre", "f"), "apple": ("pomme", "f"), "cake": ("gâteau", "m"),
    "flower": ("fleur", "f"),
}
ANIMATE = ("cat", "dog", "horse", "boy", "girl", "woman")
THINGS = ("car", "house", "book", "letter", "apple", "cake", "flower")

# English adjective -> (masculine, feminine, placed before the noun?)
ADJECTIVES = {
    "big": ("grand", "grande", True), "small": ("petit", "petite", True),
    "red": ("rouge", "rouge", False), "black": ("noir", "noire", False),
    "green": ("vert", "verte", False), "white": ("blanc", "blanche", False),
}

# English determiner -> (masculine, feminine)
DETERMINERS = {"the": ("le", "la"), "a": ("un", "une"), "my": ("mon", "ma")}

# base -> (3rd person present, past, French present, past participle, future, possible objects, pronoun object?)
VERBS = {
    "see": ("sees", "saw", "voit", "vu", "verra", ANIMATE + THINGS, True),
    "find": ("finds", "found", "trouve", "trouvé", "trouvera", ANIMATE + THINGS, True),
    "draw": ("draws", "drew", "dessine", "dessiné", "dessinera", ANIMATE + THINGS, True),
    "want": ("wants", "wanted", "veut", "voulu", "voudra", THINGS, False),
    "eat": ("eats", "ate", "mange", "mangé", "mangera", ("apple", "cake"), False),
    "read": ("reads", "read", "lit", "lu", "lira", ("book", "letter"), False),
}
PRONOUNS = {"him": "le", "her": "la"}
TENSES = ("present", "past", "future")


@dataclass(frozen=True)
class NounPhrase:
    det: str
    adj: str | None
    noun: str


@dataclass(frozen=True)
class Clause:
    """Subject, verb (base form), tense, negation and object (a noun phrase or "him"/"her")."""

    subject: NounPhrase
    verb: str
    tense: str
    negated: bool
    obj: NounPhrase | str


def english_words() -> list[str]:
    words = ["the", "a", "an", "my", *ADJECTIVES, *NOUNS, "does", "will", "not"]
    for base, (present, past, *_) in VERBS.items():
        words += [present, past, base]
    return [*words, *PRONOUNS]


def french_words() -> list[str]:
    words = [word for pair in DETERMINERS.values() for word in pair]
    words += [form for masc, fem, _ in ADJECTIVES.values() for form in (masc, fem)]
    words += [french for french, _ in NOUNS.values()] + ["ne", "pas", "a"]
    for _, _, present, participle, future, _, _ in VERBS.values():
        words += [present, participle, future]
    return words


class EnglishFrench(TranslationTask):
    name = "en-fr"
    title = "English → French"
    description = "Translate simple sentences: genders, adjectives after the noun, tenses, pronouns."
    max_input_len = 9
    max_target_len = 9
    examples = (
        "the black cat sees the small dog",
        "the girl will eat a green apple",
        "the boy does not see her",
        "my white horse drew the big house",
    )
    train_defaults = TrainDefaults(steps=2000, batch_size=64, lr=2e-3, warmup=100)
    model_defaults = MappingProxyType({"dropout": 0.1})
    src_vocab = Vocab.from_tokens(english_words())
    tgt_vocab = Vocab.from_tokens(french_words())

    def sample_meaning(self, rng: random.Random) -> Clause:
        verb = rng.choice(tuple(VERBS))
        tense = rng.choice(TENSES)
        negated = tense != "past" and rng.random() < 0.3
        *_, objects, pronoun_ok = VERBS[verb]
        if pronoun_ok and tense != "past" and rng.random() < 0.2:
            obj: NounPhrase | str = rng.choice(tuple(PRONOUNS))
        else:
            obj = self._noun_phrase(rng, objects)
        return Clause(self._noun_phrase(rng, ANIMATE), verb, tense, negated, obj)

    @staticmethod
    def _noun_phrase(rng: random.Random, nouns: Sequence[str]) -> NounPhrase:
        adj = rng.choice(tuple(ADJECTIVES)) if rng.random() < 0.5 else None
        return NounPhrase(rng.choice(tuple(DETERMINERS)), adj, rng.choice(nouns))

    def render(self, clause: Clause) -> Rendering:
        out = Rendering()
        present, past, fr_present, participle, future, _, _ = VERBS[clause.verb]
        self._render_np(out, clause.subject, "subject", source=True)
        # English verb group
        if clause.tense == "present" and clause.negated:
            out.source("does", "aux")
            out.source("not", "not")
            out.source(clause.verb, "verb")
        elif clause.tense == "present":
            out.source(present, "verb")
        elif clause.tense == "past":
            out.source(past, "verb")
        else:
            out.source("will", "aux")
            if clause.negated:
                out.source("not", "not")
            out.source(clause.verb, "verb")
        if isinstance(clause.obj, str):
            out.source(clause.obj, "pronoun")
        else:
            self._render_np(out, clause.obj, "object", source=True)
        # French: subject, [ne] [pronoun] verb [pas] [object]
        self._render_np(out, clause.subject, "subject", source=False)
        if clause.negated:
            out.target("ne", "not")
        if isinstance(clause.obj, str):
            out.target(PRONOUNS[clause.obj], "pronoun")
        if clause.tense == "past":
            out.target("a", "verb")
            out.target(participle, "verb")
        elif clause.tense == "future":
            out.target(future, "aux", "verb")
        else:
            out.target(fr_present, "verb")
        if clause.negated:
            out.target("pas", "not")
        if not isinstance(clause.obj, str):
            self._render_np(out, clause.obj, "object", source=False)
        return out

    @staticmethod
    def _render_np(out: Rendering, phrase: NounPhrase, role: str, source: bool) -> None:
        det, adj, noun = f"{role}.det", f"{role}.adj", f"{role}.noun"
        if source:
            first = phrase.adj or phrase.noun
            out.source("an" if phrase.det == "a" and first[0] in "aeiou" else phrase.det, det)
            if phrase.adj:
                out.source(phrase.adj, adj)
            out.source(phrase.noun, noun)
            return
        french, gender = NOUNS[phrase.noun]
        g = 0 if gender == "m" else 1
        out.target(DETERMINERS[phrase.det][g], det)
        before = phrase.adj is not None and ADJECTIVES[phrase.adj][2]
        if before:
            out.target(ADJECTIVES[phrase.adj][g], adj)
        out.target(french, noun)
        if phrase.adj is not None and not before:
            out.target(ADJECTIVES[phrase.adj][g], adj)

    def parse(self, words: Sequence[str]) -> Clause:
        w = Words(words)
        subject = self._parse_np(w)
        presents = {forms[0]: base for base, forms in VERBS.items()}
        pasts = {forms[1]: base for base, forms in VERBS.items()}
        if w.accept("does"):
            w.take(["not"], "'not' after 'does'")
            verb, tense, negated = w.take(VERBS, "a verb"), "present", True
        elif w.accept("will"):
            negated = w.accept("not")
            verb, tense = w.take(VERBS, "a verb"), "future"
        else:
            word = w.take(set(presents) | set(pasts), "a verb such as 'sees' or 'saw'")
            verb, tense, negated = (pasts[word], "past", False) if word in pasts else (presents[word], "present", False)
        if w.peek() in PRONOUNS:
            obj: NounPhrase | str = w.take(PRONOUNS, "him or her")
            if tense == "past":
                raise ValueError("This grammar has no past tense with 'him' or 'her' (French would need l'a vu).")
        else:
            obj = self._parse_np(w)
        if not w.done():
            raise ValueError(f"Unexpected '{w.peek()}' after the object: this sentence is outside the grammar.")
        return Clause(subject, verb, tense, negated, obj)

    @staticmethod
    def _parse_np(w: Words) -> NounPhrase:
        det = w.take({*DETERMINERS, "an"}, "a determiner (the, a, my)")
        adj = w.take(ADJECTIVES, "an adjective") if w.peek() in ADJECTIVES else None
        noun = w.take(NOUNS, "a noun")
        return NounPhrase("a" if det == "an" else det, adj, noun)


EN_FR = EnglishFrench()
