"""Text that fits: pixel estimates that let a figure choose its fonts, and thin or turn its tick labels.

A builder knows the narrowest width it will be drawn at (its `width`), so the size of a cell or the
distance between two ticks in px. These pure functions turn that into a font size that does not
collide with the neighbour, or into "label every k-th token" when even the smallest readable font
would. Widths are estimates for Helvetica / Arial (Liberation Sans), rounded up: a digit is 0.58 em
wide, a CJK character 1 em, a line 1.15 em high.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

WIDE_EM = 1.0  # a CJK character, in ems
# Latin characters in Helvetica / Arial, rounded up: narrow ones, wide ones, capitals; all others (digits too).
NARROW_EM, WIDE_LATIN_EM, CAPITAL_EM, LATIN_EM = 0.3, 0.85, 0.7, 0.58
NARROW, WIDE_LATIN = set("fijlrtI.,:;'|!()[] ·-"), set("mwMW…→←")
LINE_EM = 1.15  # height of one line of text (ascent + descent), in ems
LINE_SPACING = 1.3  # from one line of a text Plotly breaks (<br>) to the next, in ems
MIN_FONT_PX = 10  # smaller text cannot be read on a screen
PROJECTOR_FONT_PX = 16  # presenter mode: the smallest text of a figure read from the back of a classroom
CELL_FONT_PX = (11, 16)  # numbers written in cells: at least, at most
TICK_FONT_PX = 14  # the largest tick labels
TITLE_FONT_PX = 20  # Plotly's own size for a title in a 14 px figure (1.4 times)
FLAT_FONT_PX = 12  # tick labels lie flat down to this size before they turn upright
GAP_PX = 4  # between two neighbouring labels
TEXT_MIN_WIDTH = "text_min_width"  # layout.meta key: the figure width below which its cell numbers are hidden
SLANT = math.sqrt(0.5)  # sin 45°

ENTITIES = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&#39;": "'"}


def shown_text(text: str) -> list[str]:
    """The lines Plotly shows for `text`: split at <br>, other tags dropped, entities as their characters."""
    lines = re.split(r"<br\s*/?>", str(text), flags=re.IGNORECASE)
    lines = [re.sub(r"<[^>]*>", "", line) for line in lines]
    for entity, character in ENTITIES.items():
        lines = [line.replace(entity, character) for line in lines]
    return lines


def char_em(character: str) -> float:
    """Width of one character in ems, a little more than Helvetica's."""
    if unicodedata.east_asian_width(character) in "WF":
        return WIDE_EM
    if character in NARROW:
        return NARROW_EM
    if character in WIDE_LATIN:
        return WIDE_LATIN_EM
    return CAPITAL_EM if character.isupper() else LATIN_EM


def text_em(text: str) -> float:
    """Width of the widest line of `text` in ems."""
    return _text_em(str(text))


@functools.lru_cache(maxsize=2**16)  # cell numbers and tokens repeat: a figure measures thousands of texts
def _text_em(text: str) -> float:
    return max(sum(map(char_em, line)) for line in shown_text(text))


def widest_em(texts: Sequence[str]) -> float:
    return max((text_em(t) for t in texts), default=0.0)


def at_least(font: float, min_font: int) -> int:
    """A figure's own size for some text, `font` px, raised to the smallest it may draw (`min_font`: larger
    on a projector)."""
    return int(max(font, min_font))


def cell_font(cell_width: float, cell_height: float, texts: Sequence[str], largest: int = CELL_FONT_PX[1],
              smallest: int = CELL_FONT_PX[0], min_font: int = MIN_FONT_PX) -> int | None:
    """The largest font (≤ largest) at which every text fits a cell with GAP_PX to spare; None if that is
    below `smallest` (or `min_font`): then the cells are too small for numbers and show colours only."""
    largest, smallest = at_least(largest, min_font), at_least(smallest, min_font)
    widest = widest_em(texts) or LATIN_EM
    font = min(largest, math.floor((cell_width - GAP_PX) / widest), math.floor((cell_height - 2) / LINE_EM))
    return font if font >= smallest else None


@dataclass(frozen=True)
class CellText:
    """The font of the numbers in a heatmap's cells (None: colours only), and the narrowest figure width at
    which they fit (None: no numbers). The app hides them in narrower figures."""

    font: int | None
    min_width: int | None = None


def cell_text(texts: Sequence[str], cell_height: float, width: float, max_width: float, fixed_px: float,
              share: float, min_font: int = MIN_FONT_PX) -> CellText:
    """Numbers in cells `cell_height` px high, in a figure from `width` to `max_width` px wide whose cells
    are (figure width - fixed_px) · share px wide.

    They are written at the largest font that fits at `width`; else at CELL_FONT_PX[0] from the figure width
    where that fits, if that is at most `max_width`; else not at all. Never under `min_font`. Either way
    `min_width` says from which figure width they fit: a page squeezed narrower than it was laid out for (150 %
    zoom beside the sidebar) hides them rather than drawing them over each other.
    """
    font = cell_font((width - fixed_px) * share, cell_height, texts, min_font=min_font)
    if font is not None:
        return CellText(font, _fitting_width(texts, font, fixed_px, share))
    smallest = at_least(CELL_FONT_PX[0], min_font)
    min_width = _fitting_width(texts, smallest, fixed_px, share)
    if min_width > max_width or cell_height - 2 < smallest * LINE_EM:
        return CellText(None)
    return CellText(smallest, min_width)


def _fitting_width(texts: Sequence[str], font: int, fixed_px: float, share: float) -> int:
    """The narrowest figure width whose cells ((width - fixed_px) · share px) hold every text at `font`."""
    return math.ceil(fixed_px + ((widest_em(texts) or LATIN_EM) * font + GAP_PX) / share)


@dataclass(frozen=True)
class Ticks:
    """How to label an axis: every `step`-th label, flat or upright (angle -90), at `font` px.

    `depth` is the room the labels take beside the plot, in px: the height of flat labels under or
    over a plot, the width of upright ones, the width of labels left of a plot.
    """

    step: int
    angle: int
    font: int
    depth: float


def tick_plan(labels: Sequence[str], pitch_px: float, axis: str, largest: int = TICK_FONT_PX,
              min_font: int = MIN_FONT_PX) -> Ticks:
    """Labels `pitch_px` apart on an "x" axis (side by side) or a "y" axis (one above the other).

    x: flat while they fit at FLAT_FONT_PX or more, else slanted at 45° at that size or more, else upright
    while a line fits between two ticks, else flat at the smallest readable font, else every k-th label.
    y: the largest font whose line fits, else every k-th label. Never smaller than `min_font` (every size
    named here is raised to it).
    """
    largest, flat_font = at_least(largest, min_font), at_least(FLAT_FONT_PX, min_font)
    widest = widest_em(labels) or LATIN_EM
    if axis == "y":
        font = min(largest, math.floor(pitch_px / LINE_EM))
        if font >= min_font:
            return Ticks(1, 0, font, widest * font)
        font = min(largest, flat_font)
        return Ticks(math.ceil(font * LINE_EM / pitch_px), 0, font, widest * font)
    if axis != "x":
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    flat = min(largest, math.floor((pitch_px - GAP_PX) / widest))
    slanted = min(largest, math.floor(pitch_px * SLANT / LINE_EM))  # 45°: lines pitch·sin 45° apart
    upright = min(largest, math.floor(pitch_px / LINE_EM))
    if flat >= min(flat_font, largest):
        return Ticks(1, 0, flat, flat * LINE_EM)
    if slanted >= min(flat_font, largest):
        return Ticks(1, -45, slanted, (widest + LINE_EM) * slanted * SLANT)
    if upright >= min_font and widest > 2 * LATIN_EM:  # one or two characters: lie flat, thinned
        return Ticks(1, -90, upright, widest * upright)
    if flat >= min_font:
        return Ticks(1, 0, flat, flat * LINE_EM)
    font = min(largest, flat_font)
    flat_step = math.ceil((widest * font + GAP_PX) / pitch_px)
    upright_step = math.ceil(font * LINE_EM / pitch_px)
    if flat_step <= upright_step:
        return Ticks(flat_step, 0, font, font * LINE_EM)
    return Ticks(upright_step, -90, font, widest * font)


def spaced(count: int, step: int, first: Sequence[int] = ()) -> list[int]:
    """Indices of `count` labels to show, at least `step` apart: those of `first` in its order, then the
    others from index 0 on, each one only if it is far enough from every label shown so far."""
    shown: list[int] = []
    for i in [*first, *range(count)]:
        if all(abs(i - j) >= step for j in shown):
            shown.append(int(i))
    return sorted(shown)


def fit_title(title: str, width: float, font: int = TITLE_FONT_PX, min_font: int = MIN_FONT_PX) -> tuple[str, int]:
    """A title that fits `width` px: broken into lines at its " · " separators where it is longer, then set
    smaller (down to FLAT_FONT_PX + 2, or `min_font`) if a line still is. -> (text, font size)."""
    room = width - 2 * GAP_PX
    if "<br>" in title or text_em(title) * font <= room:
        lines = [title]
    else:
        lines = []
        for part in title.split(" · "):
            if lines and text_em(f"{lines[-1]} · {part}") * font <= room:
                lines[-1] += f" · {part}"
            else:
                lines.append(part)
    text = "<br>".join(lines)
    return text, int(min(font, max(FLAT_FONT_PX + 2, min_font, room // text_em(text))))


# What a line may be broken before: a CJK character, a word, spaces; punctuation that closes stays with what it closes.
CLOSING = "）」』】〕，。、：；！？)"
CJK_OR_WORD = re.compile(rf"(?:[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]|[^\s\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]+)"
                         rf"[{CLOSING}]*|\s+")


def wrapped(text: str, width_px: float, font: float) -> str:
    """`text` (Plotly markup: <br>, entities) with more line breaks where a line would be wider than `width_px` at
    `font` px: between words, or between two CJK characters."""
    lines = []
    for line in re.split(r"<br\s*/?>", text, flags=re.IGNORECASE):
        current = ""
        for piece in CJK_OR_WORD.findall(line):
            if current.strip() and not piece.isspace() and text_em(current + piece) * font > width_px:
                lines.append(current.rstrip())
                current = piece
            else:
                current += piece
        lines.append(current.strip())
    return "<br>".join(lines)


def tick_labels(values: Sequence, texts: Sequence[str], plan: Ticks, keep: Sequence[int] = ()) -> dict:
    """Axis settings for `plan`: every plan.step-th of the values and their texts, those at the indices of
    `keep` always (`spaced`: a thinned axis still names what the figure is about), the angle and font."""
    values, texts = list(values), list(texts)
    shown = spaced(len(values), plan.step, keep) if keep else range(0, len(values), plan.step)
    return dict(tickmode="array", tickvals=[values[i] for i in shown], ticktext=[texts[i] for i in shown],
                tickangle=plan.angle, tickfont=dict(size=plan.font))
