"""Every word the figures draw (titles, axis titles, legends, hover text, annotations, buttons), per language.

Figure builders take `lang="en"` (notebooks get English) and call `label(key, lang, **values)`;
a key missing from a language falls back to English.
"""

from __future__ import annotations

LABELS: dict[str, dict[str, str]] = {
    "en": {
        # lesson.py
        "entropy.title": "How spread out is attention? Softmax over {n_keys} keys",
        "entropy.scaled": "scores ÷ √d_k",
        "entropy.unscaled": "scores not scaled",
        "entropy.hover": "d_k = %{x}<br>entropy %{y:.2f} bits",
        "entropy.uniform": "uniform attention: {bits} bits",
        "entropy.d_k": "d_k (width of one head)",
        "entropy.bits": "entropy of a softmax row (bits)",
    },
    "zh": {
        # lesson.py
        "entropy.title": "注意力有多分散？{n_keys} 个键上的 softmax",
        "entropy.scaled": "分数 ÷ √d_k",
        "entropy.unscaled": "分数未缩放",
        "entropy.hover": "d_k = %{x}<br>熵 %{y:.2f} 比特",
        "entropy.uniform": "均匀注意力：{bits} 比特",
        "entropy.d_k": "d_k（单个头的宽度）",
        "entropy.bits": "softmax 行的熵（比特）",
    },
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
