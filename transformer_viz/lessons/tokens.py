"""Step 1, tokens: byte-pair encoding merges the most frequent pair of symbols, again and again (seed 003)."""

from __future__ import annotations

from collections import Counter

import plotly.graph_objects as go

from transformer_viz.data.bpe import learn_bpe
from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.colours import MUTED, TEXT_COLOUR
from transformer_viz.figures.fit import MIN_FONT_PX
from transformer_viz.figures.tokens import bpe_figure
from transformer_viz.i18n import text
from transformer_viz.lessons.question import CHOICE, Choice, Question, unasked
from transformer_viz.lessons.step import Host, Step

MAX_MERGES = 30


def learned_bpe(corpus: str):
    """The merges of a corpus typed as words separated by spaces (None: no word)."""
    counts = Counter(corpus.split())
    return learn_bpe(dict(counts), MAX_MERGES) if counts else None


def bpe_chart(corpus: str, merges: int, *, lang: str, width: int, marked: bool = True,
              min_font: int = MIN_FONT_PX) -> go.Figure:
    """The BPE figure of a corpus with merges (one that has some); `marked=False`: nothing says which pair the
    next merge takes (the step's question), see `unmark_next_merge`. No text under `min_font`."""
    learned = learned_bpe(corpus)
    shown = min(merges, len(learned.merges))
    fig = bpe_figure(learned, shown, lang=lang, width=width, min_font=min_font)
    return fig if marked else unmark_next_merge(fig, shown, lang)


def unmark_next_merge(fig: go.Figure, step: int, lang: str) -> go.Figure:
    """`bpe_figure` after `step` merges with every pair's bar alike: no colour, text, hover note or panel title
    says which one is merged next. The bars keep their order (by count; a tie in the order the pairs were met)."""
    bars = next(trace for trace in fig.data if trace.type == "bar")
    tie_note = "<br>" + text("tokens.tie", lang)
    bars.update(marker_color=MUTED, text=[str(count) for count in bars.x], textposition="outside",
                textfont_color=TEXT_COLOUR, customdata=[hover.replace(tie_note, "") for hover in bars.customdata])
    next_title = text("tokens.pairs_title", lang, next=step + 1)
    for annotation in fig.layout.annotations:
        if annotation.text == next_title:
            annotation.text = text("lesson.tokens.pairs", lang)
    return fig


def candidates(learned, shown: int, most: int = 4) -> list[tuple[str, str, int]]:
    """The pairs the next merge may take: the most frequent after `shown` merges, every pair tied at the top and
    up to `most` in all, in the order of the figure's bars."""
    counts = learned.pair_counts_after(shown)
    top = counts[0][2]
    return [pair for n, pair in enumerate(counts) if pair[2] == top or n < most][:max(most, 1)]


def show(host: Host) -> Question:
    ctx = host.page(show_tokens=False)
    if ctx is not None:
        typed = ctx.view.src_text
        host.token_chips(host.text("lesson.tokens.characters"), list(typed))
        host.token_chips(host.text("lesson.tokens.words"), typed.split())
        host.token_chips(host.text("lesson.tokens.model"), ctx.trace.form.input_tokens(ctx.trace, ctx.run.prompt_len))
    corpus_column, merges_column = host.columns([3, 1])
    corpus = corpus_column.text_input("bpe_corpus", host.text("lesson.tokens.corpus"), max_chars=2000)
    merges = merges_column.slider("bpe_merges", host.text("lesson.tokens.merges"), 0, MAX_MERGES)
    learned = host.cached(learned_bpe, corpus)
    shown = 0 if learned is None else min(merges, len(learned.merges))
    question = host.text("lesson.tokens.question", n=shown + 1)
    if learned is None or shown == len(learned.merges):
        host.info(host.text("lesson.tokens.empty"))
        return unasked(question, host.text("lesson.tokens.empty"))
    figure = host.slot()
    figure.chart(host.shared_figure(bpe_chart, corpus, shown, width=host.width, marked=False, min_font=host.min_font),
                 key="lesson_bpe")
    left, right, count = learned.merges[shown]
    pairs = candidates(learned, shown)

    def reveal(host: Host) -> str:
        figure.again().chart(host.shared_figure(bpe_chart, corpus, shown, width=host.width, min_font=host.min_font),
                             key="lesson_bpe_marked")
        tied = sum(pair[2] == count for pair in pairs) > 1
        return host.text("lesson.tokens.answer", left=host.literal(left), right=host.literal(right), count=count) + (
            " " + host.text("lesson.tokens.tie") if tied else "")

    return Question(question, CHOICE, reveal, truth=f"{left} {right}",
                    choices=tuple(Choice(f"{a} {b}", f"{host.literal(a)} + {host.literal(b)}") for a, b, _ in pairs),
                    tells=(host.text("tokens.next_merge", count=count),))  # the marked bar's words


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((learn_bpe, ("best = max(counts.values())", "left, right = next(pair for pair in seen",
                        "symbols = {word: _merge_pair(")),)

STEP = Step(
    "tokens", "embeddings", r"(a,b)^{*}=\arg\max_{(a,b)}\ \sum_{w}\text{%s}(w)\cdot\#_{(a,b)}(w)", show,
    # "the black cat sees the small dog"; the BPE learner opens before its first merge, which the question is about
    setup={"task": "en-fr", "src_text": TASKS["en-fr"].examples[0], "bpe_merges": 0},
    formula_words=("lesson.tokens.count",), code=CODE,
)
