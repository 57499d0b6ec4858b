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
        # tokens.py
        "tokens.title_start": "Byte-pair encoding before any merge: every word as characters and {end}",
        "tokens.title_step": "After merge {step} of {total}: {left} + {right} → {merged}",
        "tokens.words_title": "The corpus, one row per word",
        "tokens.pairs_title": "Adjacent pairs: merge {next} takes the top one",
        "tokens.pairs_stopped": "Adjacent pairs left (learning stopped after {step} merges)",
        "tokens.no_pairs": "Every word is one symbol: no pair left to merge",
        "tokens.count": "× {count}",
        "tokens.count_axis": "occurrences (each weighted by its word's count)",
        "tokens.symbol_hover": "word “{word}” × {count}<br>symbol {position}: “{symbol}”",
        "tokens.pair_hover": "“{left}” + “{right}” → “{merged}”<br>{count} occurrences",
        "tokens.next_merge": "{count} ← next merge",
        "tokens.tie": "as many as the next merge: the pair seen first wins the tie",
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
        # tokens.py
        "tokens.title_start": "字节对编码(BPE)合并之前:每个词拆成字符,末尾加 {end}",
        "tokens.title_step": "第 {step} 次合并(共 {total} 次):{left} + {right} → {merged}",
        "tokens.words_title": "语料库,每行一个词",
        "tokens.pairs_title": "相邻符号对:第 {next} 次合并取最高的一对",
        "tokens.pairs_stopped": "剩下的相邻符号对(学习在 {step} 次合并后停止)",
        "tokens.no_pairs": "每个词都已是一个符号:没有可合并的符号对",
        "tokens.count": "{count} 次",
        "tokens.count_axis": "出现次数(按所在词的词频加权)",
        "tokens.symbol_hover": "词“{word}”出现 {count} 次<br>第 {position} 个符号:“{symbol}”",
        "tokens.pair_hover": "“{left}” + “{right}” → “{merged}”<br>出现 {count} 次",
        "tokens.next_merge": "{count} ← 下一次合并",
        "tokens.tie": "与下一次合并的次数相同:先出现的符号对胜出",
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
