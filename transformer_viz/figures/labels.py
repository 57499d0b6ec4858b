"""Every word the figures draw (titles, axis titles, legends, hover text, annotations, buttons), per language.

Figure builders take `lang="en"` (notebooks get English) and call `label(key, lang, **values)`;
a key missing from a language falls back to English.
"""

from __future__ import annotations

LABELS: dict[str, dict[str, str]] = {
    "en": {},
    "zh": {},
}
LANGUAGES = tuple(LABELS)


def label(key: str, lang: str = "en", /, **values) -> str:
    """The text of `key` in `lang`, with `values` filled in."""
    if lang not in LABELS:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    text = LABELS[lang].get(key, LABELS["en"].get(key))
    if text is None:
        raise KeyError(f"no figure label {key!r}")
    return text.format(**values) if values else text
