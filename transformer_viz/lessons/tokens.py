"""Step 1, tokens: byte-pair encoding merges the most frequent pair of symbols, again and again (seed 003)."""

from __future__ import annotations

from collections import Counter

from transformer_viz.data.bpe import learn_bpe
from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.tokens import bpe_figure
from transformer_viz.lessons.step import Host, Step

MAX_MERGES = 30


def learned_bpe(corpus: str):
    """The merges of a corpus typed as words separated by spaces (None: no word)."""
    counts = Counter(corpus.split())
    return learn_bpe(dict(counts), MAX_MERGES) if counts else None


def bpe_chart(corpus: str, merges: int, *, lang: str, width: int):
    """The BPE figure of a corpus with merges (one that has some)."""
    learned = learned_bpe(corpus)
    return bpe_figure(learned, min(merges, len(learned.merges)), lang=lang, width=width)


def show(host: Host) -> tuple[str, str]:
    ctx = host.page(show_tokens=False)
    if ctx is not None:
        text = ctx.view.src_text
        host.token_chips(host.text("lesson.tokens.characters"), list(text))
        host.token_chips(host.text("lesson.tokens.words"), text.split())
        host.token_chips(host.text("lesson.tokens.model"), ctx.trace.src_tokens)
    corpus_column, merges_column = host.columns([3, 1])
    corpus = corpus_column.text_input("bpe_corpus", host.text("lesson.tokens.corpus"), max_chars=2000)
    merges = merges_column.slider("bpe_merges", host.text("lesson.tokens.merges"), 0, MAX_MERGES)
    question = host.text("lesson.tokens.question")
    learned = host.cached(learned_bpe, corpus)
    if learned is None or not learned.merges:
        host.info(host.text("lesson.tokens.empty"))
        return question, host.text("lesson.tokens.empty")
    host.chart(host.shared_figure(bpe_chart, corpus, merges, width=host.width), key="lesson_bpe")
    left, right, count = learned.merges[0]
    return question, host.text("lesson.tokens.answer", left=host.literal(left), right=host.literal(right),
                               count=count)


STEP = Step(
    "tokens", "embeddings", r"(a,b)^{*}=\arg\max_{(a,b)}\ \sum_{w}\mathrm{count}(w)\cdot\#_{(a,b)}(w)", show,
    setup={"task": "en-fr", "src_text": TASKS["en-fr"].examples[0]},  # "the black cat sees the small dog"
)
