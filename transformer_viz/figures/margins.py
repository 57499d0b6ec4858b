"""Margins set before drawing: what Plotly's automargin would grow them to, estimated from the figure's own text.

With `automargin`, Plotly measures every tick label in the browser and, whenever a margin grows, draws the whole
figure again; colour bars and legends outside the plot push the margins the same way. On a page of ten charts
that was most of the drawing time (bench/bench_pages.py). `settle_margins` turns automargin off and writes
margins wide enough for the tick labels, axis titles, colour bars and legends, so that one drawing is enough.
Widths are fit.py's estimates, rounded up: a label is never cut, a margin is at most a few px wider.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterator

import numpy as np
import plotly.graph_objects as go

from transformer_viz.figures.fit import LINE_EM, shown_text, text_em
from transformer_viz.figures.subplots import axis_key

PLOTLY_MARGIN = dict(l=80, r=80, t=100, b=80)  # Plotly's defaults, for a side the figure does not set
PUSH_PAD = 12  # Plotly adds min(12, the smallest margin) to what pushes a margin
SLACK = 3  # px more than estimated beside an axis: its labels are never cut
LABEL_GAP = 3  # between a plot's edge and its tick labels, px
TITLE_STANDOFF = 0  # Plotly's own distance from the tick labels to an axis title that sets none: next to them
AUTO_SIN, AUTO_COS = math.sin(math.radians(30)), math.cos(math.radians(30))  # Plotly's first turn of tick labels
WIDEST_PLOT_PX = 1880  # the widest a plot is drawn (MAX_MAIN_WIDTH): what a place right of it in plot widths is
LEGEND_ROW_PX = 400  # the px of legend entries assumed to fit a row (a narrow screen at 150 %)
EDGE = 0.01  # an axis whose plot starts within this share of the figure's edge labels into the margin
NO_LEGEND = ("heatmap", "contour", "histogram2d")  # trace types Plotly leaves out of a legend unless told
AXIS_KEY = re.compile(r"([xy])axis(\d*)$")
# Room a colour bar's tick labels always get: numbers that change with a control (weights 0–1, scores −60–60)
# keep one margin, so the plot does not move and Plotly redraws without a new layout (~4 ms less per chart).
BAR_LABEL_ROOM = "−0.5"


def settle_margins(figure: dict) -> dict:
    """`figure` (a `to_dict()`; its layout changed): automargin off on every axis, and each margin as wide as
    the labels, titles, colour bars and legends beside the plot need (never narrower than it was)."""
    layout = figure.setdefault("layout", {})
    margin = {**PLOTLY_MARGIN, **layout.get("margin", {})}
    pad = min(PUSH_PAD, *margin.values())
    font = layout.get("font", {}).get("size", 12)
    need = dict(l=0.0, r=0.0, t=0.0, b=0.0)
    for trace in figure.get("data", ()):  # an axis a trace draws on that the layout leaves to Plotly's defaults
        if {"x", "y", "z"} & trace.keys():
            for letter in "xy":
                layout.setdefault(axis_key(trace.get(f"{letter}axis", letter)), {})
    for name, axis in _axes(layout):
        if axis.get("automargin", True):
            for side, depth in _axis_needs(name, axis, layout, figure.get("data", ()), font).items():
                need[side] = max(need[side], depth + pad + SLACK)
        axis["automargin"] = False
    for trace in figure.get("data", ()):
        need["r"] = max(need["r"], _colour_bar_width(trace, font) + PUSH_PAD)
    side, depth = _legend_depth(layout, figure.get("data", ()), margin, font)
    if side:
        need[side] = max(need[side], depth + PUSH_PAD)
    layout["margin"] = {**layout.get("margin", {}),
                        **{s: math.ceil(max(margin[s], need[s])) for s in need if need[s] > margin[s]}}
    return figure


def line_up(figures: list[go.Figure]) -> None:
    """Give `figures`, drawn one above the other, the widest left and the widest right margin any of them needs,
    so that their plots line up. Changes them: figures built for this run, never ones shared by the figure cache."""
    margins = [settle_margins(figure.to_dict())["layout"]["margin"] for figure in figures]
    left, right = (max(margin.get(side, PLOTLY_MARGIN[side]) for margin in margins) for side in "lr")
    for figure in figures:
        figure.layout.margin.update(l=left, r=right)


def _axes(layout: dict) -> Iterator[tuple[str, dict]]:
    for key, axis in layout.items():
        match = AXIS_KEY.match(key)
        if match and isinstance(axis, dict):
            yield match[1] + match[2], axis


def _axis_needs(name: str, axis: dict, layout: dict, data, font: float) -> dict[str, float]:
    """The px this axis's tick labels and title take in each margin they reach ("l", "r", "t", "b"). Where Plotly
    chooses the angle of an x axis's labels itself, there is room for every angle it may choose."""
    if axis.get("visible") is False:
        return {}
    letter = name[0]
    other = layout.get(axis_key(axis.get("anchor", "y" if letter == "x" else "x")), {})
    across = other.get("domain", [0, 1]) if axis.get("anchor") != "free" else [0, 1]
    along = axis.get("domain", [0, 1])
    side = axis.get("side", "bottom" if letter == "x" else "left")
    needs: dict[str, float] = {}
    labels = _tick_labels(name, axis, data) if axis.get("showticklabels", True) else []
    depth = 0.0
    if labels:
        tick_font = axis.get("tickfont", {}).get("size", font)
        widest = max(text_em(label) for label in labels) * tick_font
        high = tick_font * LINE_EM * max(len(shown_text(label)) for label in labels)
        automatic = letter == "x" and not isinstance(axis.get("tickangle"), int | float)
        degrees = 0 if automatic or letter == "y" else axis.get("tickangle", 0)
        angle = math.radians(degrees)
        turned_across = widest * abs(math.sin(angle)) + high * abs(math.cos(angle))  # from the axis outwards
        turned_along = widest * abs(math.cos(angle)) + high * abs(math.sin(angle))
        slanted = 0 < abs(degrees) < 90
        if automatic:  # Plotly turns them by 30° or 90° where they would meet (autotickangles): room for either
            turned_across = max(high, widest * AUTO_SIN + high * AUTO_COS, widest) + 2 * LABEL_GAP
        depth = LABEL_GAP + (turned_across + LABEL_GAP * slanted if letter == "x" else widest)
        if slanted:  # the end label leans out of the plot
            rising = (degrees < 0) == (side == "top")
            edge, at = ("r", along[1] >= 1 - EDGE) if rising else ("l", along[0] <= EDGE)
            if at:
                needs[edge] = turned_along
        elif letter == "x":  # half of each end label beyond the plot, at most (turned by 30°: the first leans out)
            first = widest * AUTO_COS if automatic else _half_across(labels[0], degrees, high, tick_font)
            last = _half_across(labels[-1], degrees, high, tick_font)
            for edge, at, room in (("l", along[0] <= EDGE, first), ("r", along[1] >= 1 - EDGE, last)):
                if at:
                    needs[edge] = room
        if letter == "y":  # the end labels stand half a line beyond the plot
            needs.update({k: high / 2 for k, at in (("b", along[0] <= EDGE), ("t", along[1] >= 1 - EDGE)) if at})
    title = axis.get("title", {})
    title_text = title.get("text") if isinstance(title, dict) else title
    if title_text:
        title_font = title.get("font", {}).get("size", font) if isinstance(title, dict) else font
        standoff = title.get("standoff", TITLE_STANDOFF) if isinstance(title, dict) else TITLE_STANDOFF
        depth += standoff + title_font * LINE_EM * len(shown_text(title_text)) + LABEL_GAP
    if across[0] <= EDGE if side in ("left", "bottom") else across[1] >= 1 - EDGE:
        needs[{"left": "l", "right": "r", "bottom": "b", "top": "t"}[side]] = depth
    return needs


def _half_across(label: str, degrees: float, high: float, font: float) -> float:
    """Half the width a flat (or upright) tick label takes along its axis."""
    return high / 2 if abs(degrees) == 90 else text_em(label) * font / 2


def _tick_labels(name: str, axis: dict, data) -> list[str]:
    """The texts this axis writes beside its ticks (numbers: the widest Plotly might choose)."""
    if "ticktext" in axis:
        return [str(t) for t in axis["ticktext"]]
    if "tickvals" in axis:
        return [_number(v, axis) for v in axis["tickvals"]]
    values = [v for trace in data if _on_axis(trace, name) for v in _coordinates(trace, name[0])]
    texts = [v for v in values if isinstance(v, str)]
    if texts or axis.get("type") == "category":
        return [str(v) for v in texts or values]
    numbers = [float(v) for v in values if isinstance(v, int | float | np.number)]
    ranged = axis.get("range") or ([min(numbers), max(numbers)] if numbers else [0, 1])
    if axis.get("type") == "log":
        return [_number(10.0 ** e, axis) for e in range(math.floor(ranged[0]), math.ceil(ranged[1]) + 1)]
    return _nice_labels(float(min(ranged)), float(max(ranged)), axis)


def _on_axis(trace: dict, name: str) -> bool:
    own = trace.get(f"{name[0]}axis", name[0])
    return own == name and trace.get("orientation") != "h" if name[0] == "x" else own == name


def _coordinates(trace: dict, letter: str) -> list:
    """A trace's values along x or y (a horizontal bar's x are numbers along its y's categories)."""
    values = trace.get(letter)
    if values is None:
        z = trace.get("z")
        if z is None:
            return []
        shape = np.shape(_array(z) if isinstance(z, dict) else z)
        return list(range(shape[1] if letter == "x" else shape[0])) if len(shape) == 2 else []
    flat = (_array(values) if isinstance(values, dict) else np.asarray(values, dtype=object)).ravel().tolist()
    if trace.get("type") == "waterfall" and letter == "y":
        sums = np.cumsum([float(v) for v in flat if isinstance(v, int | float)])
        return [0.0, *sums.tolist()]
    if trace.get("type") == "bar":
        flat = [0.0, *flat]
    return flat


def _array(values) -> np.ndarray:
    """Numbers as floats, from a list (None: NaN) or Plotly's typed-array form {"dtype", "bdata", "shape"}."""
    if isinstance(values, dict) and "bdata" in values:
        array = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        shape = values.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")] if shape else -1).astype(float)
    return np.array(values, dtype=float)


def _nice_labels(low: float, high: float, axis: dict) -> list[str]:
    """Tick texts of a numeric range at Plotly's steps (1, 2 or 5 × 10^k, 4 to 6 ticks): all of them,
    at every step Plotly might choose."""
    span = high - low or abs(high) or 1.0
    texts = []
    for count in (4, 6):
        raw = span / count
        power = 10 ** math.floor(math.log10(raw))
        step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
        first = math.ceil(low / step) * step
        ticks = np.arange(first, high + step * 1e-6, step)
        texts += [_number(v, axis, step) for v in ticks]
    return texts


def _number(value, axis: dict, step: float | None = None) -> str:
    """A tick value as Plotly writes it (its format, or as many decimals as the step has)."""
    if not isinstance(value, int | float | np.number):
        return str(value)
    form = axis.get("tickformat", "")
    if form.endswith("%"):
        return f"{value * 100:.{int(form[1:-1] or 0) if form[1:-1].isdigit() else 0}f}%"
    decimals = max(0, -math.floor(math.log10(step))) if step else 2 if value % 1 else 0
    written = f"{value:.{decimals}f}"
    written = written.rstrip("0").rstrip(".") if "." in written else written
    return ("−" if value < 0 else "") + written.lstrip("-") + axis.get("ticksuffix", "")


def _colour_bar_width(trace: dict, font: float) -> float:
    """The px a trace's colour bar takes right of the plot (0: it has none). A bar at Plotly's default place
    (x = 1.02 plot widths, a distance growing with the figure's width) is put at the plot's edge."""
    if trace.get("type") not in ("heatmap", "contour", "histogram2d") or trace.get("showscale") is False \
            or "coloraxis" in trace:
        return 0.0
    bar = trace.setdefault("colorbar", {})
    if "x" not in bar:
        bar.update(x=1.0, xanchor="left")
    if bar.get("x", 1.0) < 1.0 or bar.get("xanchor", "left") != "left" or bar.get("orientation") == "h":
        return 0.0
    tick_font = bar.get("tickfont", {}).get("size", font)
    if "ticktext" in bar:
        labels = [str(t) for t in bar["ticktext"]]
    else:
        z = _array(trace.get("z", [[0.0]]))
        finite = z[np.isfinite(z)]
        low = trace.get("zmin", float(finite.min()) if finite.size else 0.0)
        high = trace.get("zmax", float(finite.max()) if finite.size else 1.0)
        labels = _nice_labels(float(low), float(high), bar)
    pad = bar.get("xpad", 10)  # on both sides of the bar, its labels and title
    widest = max(text_em(label) for label in [*labels, BAR_LABEL_ROOM]) * tick_font
    width = bar.get("thickness", 30) + LABEL_GAP + 2 + widest
    title = bar.get("title", {})
    title_text = title.get("text") if isinstance(title, dict) else title
    if title_text:
        title_font = title.get("font", {}).get("size", font) if isinstance(title, dict) else font
        if isinstance(title, dict) and title.get("side") == "right":
            width += title_font * LINE_EM * len(shown_text(title_text)) + LABEL_GAP
        else:
            width = max(width, text_em(title_text) * title_font + 2 * LABEL_GAP)
    return (bar["x"] - 1.0) * WIDEST_PLOT_PX + 2 * pad + width + LABEL_GAP


def _legend_depth(layout: dict, data, margin: dict, font: float) -> tuple[str | None, float]:
    """The side a legend outside the plot pushes (None: inside, or no legend) and the px it takes there."""
    shown = [t for t in data if t.get("showlegend", t.get("type") not in NO_LEGEND) and t.get("name")]
    if layout.get("showlegend") is False or not shown or (layout.get("showlegend") is None and len(shown) < 2):
        return None, 0.0
    legend = layout.get("legend", {})
    legend_font = legend.get("font", {}).get("size", font)
    row = legend_font * LINE_EM + 10
    if legend.get("orientation") == "h":
        y = legend.get("y", -0.1)
        if y >= 0:
            return None, 0.0
        plot_height = layout.get("height", 450) - margin["t"] - margin["b"]
        rows = math.ceil(sum(text_em(t["name"]) * legend_font + 50 for t in shown) / LEGEND_ROW_PX)
        return "b", rows * row + 10 - y * plot_height
    if legend.get("x", 1.02) <= 1.0:
        return None, 0.0
    return "r", max(text_em(t["name"]) for t in shown) * legend_font + 60
