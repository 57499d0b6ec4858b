"""Byte-pair encoding, one merge at a time (seed 003's worked example): the corpus as symbols, the next pair.

Left: each corpus word as a row of symbol chips after `step` merges, the symbol the last merge made
highlighted, the word's count beside it. Right: the adjacent-pair counts that decide merge step + 1,
as horizontal bars with the winner highlighted. Everything is read from a `BytePairEncoding`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from transformer_viz.data.bpe import END, BytePairEncoding
from transformer_viz.figures.colours import HIGHLIGHT, MUTED, TEXT_COLOUR
from transformer_viz.figures.fit import GAP_PX, MIN_FONT_PX, at_least, text_em, wrapped
from transformer_viz.figures.look import FONT, base_layout
from transformer_viz.figures.token_axes import escape_text, token_axis
from transformer_viz.i18n import text

TOP_PAIRS = 10  # bars in the pair table: enough to show the runners-up and any tie
CHIP_PADDING = 0.8  # a chip's width beyond its text, in character widths
CHIP_GAP = 0.3  # between two chips of a word
CHIP_HEIGHT = 0.7  # of a row's height of 1
CHIP_FILL = "#ffffff"
END_FILL = "#f1f3f6"  # the end-of-word marker: a quieter chip with a dotted edge
COUNT_WIDTH = 5  # room right of the widest row for its count ("× 7"), in character widths
ROW_PIXELS = 40
PANEL_WIDTHS, PANEL_SPACING, RIGHT_PX = (0.6, 0.4), 0.1, 40  # the corpus, the pair table; between; right margin


def text_width(shown: str) -> int:
    """Width of `shown` in character widths: wide (CJK) characters count 2, all others 1."""
    return sum(2 if unicodedata.east_asian_width(character) in "WF" else 1 for character in shown)


def chip_spans(symbols: Sequence[str]) -> list[tuple[float, float]]:
    """(left, right) x of each symbol's chip in one row, from 0, in character widths, CHIP_GAP apart."""
    spans, left = [], 0.0
    for symbol in symbols:
        right = left + text_width(symbol) + CHIP_PADDING
        spans.append((left, right))
        left = right + CHIP_GAP
    return spans


def bpe_figure(bpe: BytePairEncoding, step: int, lang: str = "en", width: int = 1100,
               min_font: int = MIN_FONT_PX) -> go.Figure:
    """The corpus after `step` merges (0 = characters) beside the pair counts that choose merge step + 1.

    step: 0 to len(bpe.merges). The chips the merge `step` made are highlighted, and so is the
    pair table's top bar when a merge step + 1 was learned. Words and symbols are shown as typed.
    `width`: the narrowest it is drawn at; the pair table's axis title fits under it. No text under `min_font`.
    """
    if not isinstance(bpe, BytePairEncoding):
        raise ValueError(f"bpe must be what learn_bpe returns, got a {type(bpe).__name__}.")
    rows = list(bpe.symbols_after(step).items())  # checks step
    pairs = bpe.pair_counts_after(step)[:TOP_PAIRS]
    has_next = step < len(bpe.merges)
    merged = "".join(bpe.merges[step - 1][:2]) if step else None  # left + right: the symbol the last merge made
    pairs_title = (text("tokens.pairs_title", lang, next=step + 1) if has_next
                   else text("tokens.pairs_stopped", lang, step=step))
    fig = make_subplots(rows=1, cols=2, column_widths=list(PANEL_WIDTHS), horizontal_spacing=PANEL_SPACING,
                        subplot_titles=(text("tokens.words_title", lang), pairs_title))
    chips, widest = _add_corpus(fig, rows, dict(bpe.word_counts), merged, at_least(14, min_font), lang)
    _add_pair_bars(fig, pairs, has_next, at_least(15, min_font), lang)
    base_layout(fig, _bpe_title(bpe, step, lang), height=120 + ROW_PIXELS * max(len(rows), len(pairs), 3),
                min_font=min_font)
    # One assignment: add_shape per chip is slow.
    fig.update_layout(shapes=chips, bargap=0.3, margin=dict(t=80, r=RIGHT_PX))
    _style_axes(fig, [word for word, _ in rows], widest, pairs, width, min_font, lang)
    return fig


def _bpe_title(bpe: BytePairEncoding, step: int, lang: str) -> str:
    """"After merge 2 of 5: h + i → hi", or before any merge: every word as characters and the end marker."""
    if not step:
        return text("tokens.title_start", lang, end=escape_text(END))
    left, right, _ = bpe.merges[step - 1]
    return text("tokens.title_step", lang, step=step, total=len(bpe.merges), left=escape_text(left),
                right=escape_text(right), merged=escape_text(left + right))


def _add_corpus(fig: go.Figure, rows: list[tuple[str, Sequence[str]]], counts: dict[str, int], merged: str | None,
                count_font: int, lang: str) -> tuple[list[dict], float]:
    """Each word (row) as its symbols' chips and its count, into the left panel; the symbol `merged` highlighted.

    Returns the chips (shapes, for one layout assignment) and the x of the widest row's right end.
    """
    spans = [chip_spans(word_symbols) for _, word_symbols in rows]
    widest = max(row[-1][1] for row in spans)
    chips, chip_x, chip_y, chip_text, chip_colour, chip_hover = [], [], [], [], [], []
    for row, ((word, word_symbols), row_spans) in enumerate(zip(rows, spans, strict=True)):
        for position, (symbol, (x0, x1)) in enumerate(zip(word_symbols, row_spans, strict=True)):
            chosen = symbol == merged
            chips.append(dict(type="rect", x0=x0, x1=x1, y0=row - CHIP_HEIGHT / 2, y1=row + CHIP_HEIGHT / 2,
                              xref="x", yref="y", layer="below",
                              fillcolor=HIGHLIGHT if chosen else END_FILL if symbol == END else CHIP_FILL,
                              line=dict(color=HIGHLIGHT if chosen else MUTED, width=1.5,
                                        dash="dot" if symbol == END else "solid")))
            chip_x.append((x0 + x1) / 2)
            chip_y.append(row)
            chip_text.append(escape_text(symbol))
            chip_colour.append("white" if chosen else TEXT_COLOUR)
            chip_hover.append(text("tokens.symbol_hover", lang, word=escape_text(word), count=counts[word],
                                    position=position, symbol=escape_text(symbol)))
    fig.add_trace(go.Scatter(x=chip_x, y=chip_y, mode="text", text=chip_text, customdata=chip_hover,
                             textfont=dict(size=16, color=chip_colour), hovertemplate="%{customdata}<extra></extra>",
                             showlegend=False), row=1, col=1)
    fig.add_trace(go.Scatter(x=[widest + CHIP_GAP] * len(rows), y=list(range(len(rows))), mode="text",
                             text=[text("tokens.count", lang, count=counts[word]) for word, _ in rows],
                             textposition="middle right", textfont=dict(size=count_font, color=TEXT_COLOUR),
                             hoverinfo="skip", showlegend=False), row=1, col=1)
    return chips, widest


def _add_pair_bars(fig: go.Figure, pairs: Sequence[tuple[str, str, int]], has_next: bool, note_font: int,
                   lang: str) -> None:
    """The adjacent-pair counts as horizontal bars, into the right panel; the next merge's (the top) highlighted."""
    winner = pairs[0][2] if has_next else None
    bar_hover = []
    for i, (left, right, count) in enumerate(pairs):
        hover = text("tokens.pair_hover", lang, left=escape_text(left), right=escape_text(right),
                      merged=escape_text(left + right), count=count)
        bar_hover.append(f"{hover}<br>{text('tokens.tie', lang)}" if i and count == winner else hover)
    is_next = [i == 0 and has_next for i in range(len(pairs))]
    fig.add_trace(go.Bar(
        x=[count for _, _, count in pairs], y=list(range(len(pairs))), orientation="h", customdata=bar_hover,
        marker=dict(color=[HIGHLIGHT if chosen else MUTED for chosen in is_next]),
        text=[text("tokens.next_merge", lang, count=count) if chosen else str(count)
              for chosen, (_, _, count) in zip(is_next, pairs, strict=True)],
        # the winner is the longest bar, so its longer text fits inside it
        textposition=["inside" if chosen else "outside" for chosen in is_next], insidetextanchor="end",
        textfont=dict(color=["white" if chosen else TEXT_COLOUR for chosen in is_next]),
        cliponaxis=False, hovertemplate="%{customdata}<extra></extra>", showlegend=False,
    ), row=1, col=2)
    if not pairs:
        fig.add_annotation(text=text("tokens.no_pairs", lang), showarrow=False, xref="x2 domain", yref="y2 domain",
                           x=0.5, y=0.5, font=dict(size=note_font, color="#888"))


def _style_axes(fig: go.Figure, words: list[str], widest: float, pairs: Sequence[tuple[str, str, int]], width: int,
                min_font: int, lang: str) -> None:
    """The words down the left panel (chips from x = 0 to `widest`, room for the counts), the pairs down the right."""
    fig.update_xaxes(visible=False, range=[-CHIP_GAP, widest + COUNT_WIDTH], row=1, col=1)
    fig.update_yaxes(token_axis(words, len(words)), range=[len(words) - 0.5, -0.5], showgrid=False, row=1, col=1)
    fig.update_xaxes(title_text=text("tokens.count_axis", lang), rangemode="tozero", row=1, col=2)
    # The axis title is centred under the narrower panel: it may reach into the margins beside it, not beyond.
    room = (width - 60 - RIGHT_PX) * PANEL_WIDTHS[1] * (1 - PANEL_SPACING) + 2 * RIGHT_PX - GAP_PX
    title = text("tokens.count_axis", lang)
    font = int(max(min(at_least(FONT["size"], min_font), room // text_em(title)), min_font))
    fig.update_xaxes(title_text=wrapped(title, room, font), title_font_size=font, row=1, col=2)  # lines, if need be
    fig.update_yaxes(token_axis([f"{left} + {right}" for left, right, _ in pairs], len(pairs)),
                     range=[max(len(pairs), 1) - 0.5, -0.5], row=1, col=2)
