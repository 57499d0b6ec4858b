"""Every word the user sees, per language: one catalog each (en.py, zh.py), one lookup, `text`.

    text("attention.large", "zh", layer=2, head=3)   # "第 2 层，第 3 个头"

Pages (through the app's `tr`, in the session's language) and figure builders (`lang="en"`: a notebook gets
English) read the same catalogs. A key missing from a language falls back to English, so a language can be added
without touching a page or a figure; an unknown key is a KeyError naming it, an unknown language a ValueError
naming the languages. The package's translatable errors say "detail.<key>" (`translatable_error`).
"""

from __future__ import annotations

from transformer_viz.errors import TranslatableError
from transformer_viz.i18n.en import ENGLISH
from transformer_viz.i18n.zh import CHINESE

CATALOGS: dict[str, dict[str, str]] = {"en": ENGLISH, "zh": CHINESE}
LANGUAGES = tuple(CATALOGS)
LANGUAGE_NAMES = {"en": "English", "zh": "中文"}  # each in its own words, as the language switch shows them


def text(key: str, lang: str = "en", /, **values) -> str:
    """The sentence of `key` in `lang` (English when that language lacks it), with `values` filled in."""
    catalog = CATALOGS.get(lang)
    if catalog is None:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    sentence = catalog.get(key) or ENGLISH.get(key)
    if sentence is None:
        raise KeyError(f"no text {key!r}")
    return sentence.format(**values) if values else sentence


def particular(key: str, suffixes: tuple[str, ...]) -> str:
    """The most particular key the catalogs have: `key` + the first suffix that makes one, else `key` itself
    (a model's own words: `particular("decoding.intro", ("_hf_causal", "_decoder_only"))`)."""
    return next((key + suffix for suffix in suffixes if key + suffix in ENGLISH), key)


def translatable_error(key: str, /, **values) -> TranslatableError:
    """The error `key` naming `values`: its English sentence is "detail.<key>", which the app says in its language."""
    return TranslatableError(key, text(f"detail.{key}", **values), **values)
