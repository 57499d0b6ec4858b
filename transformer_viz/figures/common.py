"""What every figure shares: colours, the base layout, token text and axes, numbers, attention arrays.

Figures are pure Plotly: numpy arrays or Trace entries in, go.Figure out. Colour
scales are set explicitly on every trace, because importing Streamlit changes
Plotly's default template.
"""

from __future__ import annotations

import copy
import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from transformer_viz.figures.fit import MIN_FONT_PX, TITLE_FONT_PX, at_least, fit_title
from transformer_viz.i18n import text
from transformer_viz.trace.names import attention_name, check_index, check_kind, token_labels
from transformer_viz.trace.record import Trace, recorded_attention, recorded_mask

# Colour-blind-safe scales that stay readable on a projector.
SEQUENTIAL = "Viridis"  # attention weights, masks: 0 dark -> 1 bright
DIVERGING = "RdBu_r"  # signed values (embeddings, scores): blue < 0 < red
MASK_COLOURS = [[0.0, "#3b3b3b"], [1.0, "#f2c14e"]]  # blocked (dark) / may attend (amber)
TEXT_COLOUR = "#2a3f5f"
GRID_COLOUR = "#EBF0F8"
FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=14)
# Lines and bars: the Okabe-Ito palette (colour-blind safe), set explicitly on every trace.
LINE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
HIGHLIGHT = "#D55E00"  # the chosen token, the current step
MUTED = "#9aa5b1"  # everything else
# Attention cells the mask blocks: a neutral grey that no colour scale above contains.
BLOCKED_GREY = "#c8c8c8"
MINUS = "−"  # a true minus sign: "-" is a hyphen


# Plotly's template "none" as the dict it stands for (what validating template="none" writes into a figure).
NO_TEMPLATE = pio.templates["none"].to_plotly_json()
# The shared look of every axis (base_layout). Tick labels are planned to fit (fit.py, margins.py), so Plotly need
# not measure each one to hide those past the figure's edge (`ticklabeloverflow`'s default, "hide past div": a
# forced layout per label, half of a 32 x 32 head's draw).
AXIS_LOOK = dict(gridcolor=GRID_COLOUR, linecolor=GRID_COLOUR, zerolinecolor=GRID_COLOUR, ticks="", automargin=True,
                 title=dict(standoff=15), ticklabeloverflow="allow")


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None,
                width: int | None = None, then: dict | None = None, min_font: int = MIN_FONT_PX) -> go.Figure:
    """Apply the shared look: white background, light grid, readable font, tight margins.

    `width`, the narrowest the figure is drawn at when known: a longer title is broken into lines
    (then set smaller) to fit it (`fit_title`). `then`: layout settings (nested dicts, no "margin_t" shorthands)
    applied after the look, as a `fig.update_layout(...)` after this call would, without its cost. `min_font`: the
    smallest text the figure draws (PROJECTOR_FONT_PX in presenter mode), the figure's own font no smaller.
    The look of plotly_white, set directly on an empty template: assigning a named
    template copies all of it into every figure (about 17 ms and 7 kB of JSON each).

    What `fig.update_layout(...)`, `fig.update_xaxes(...)` and `fig.update_yaxes(...)` would do, merged into the
    layout as a dict and set once: Plotly's update machinery costs ~4 ms per axis (40 ms for a figure of nine
    panels), setting a whole layout a tenth of that. `styled_figure` does it without building the figure twice.
    """
    fig.layout = styled_layout(fig.layout.to_plotly_json(), title, height, width, then,  # to_plotly_json: a copy
                               min_font)
    return fig


def styled_figure(data, layout: dict | None = None, title: str | None = None, height: int | None = None,
                  width: int | None = None, then: dict | None = None, min_font: int = MIN_FONT_PX) -> go.Figure:
    """`base_layout(go.Figure(data, layout), title, height, width, then, min_font)`, the same figure built once.
    `layout` (used up) and `then` in nested form: {"margin": {"t": 10}}, not {"margin_t": 10}. `data`: go traces
    (each validated as it was made)."""
    return assembled_figure(data, styled_layout(layout or {}, title, height, width, then, min_font))


def assembled_figure(traces: Sequence[go.BaseTraceType] | go.BaseTraceType, layout: dict) -> go.Figure:
    """go.Figure(traces, layout) without Plotly validating every property a second time (about half of what
    building a figure costs): each trace was validated as it was made, and every chart the app draws passes
    Plotly's validation in its tests (test_app's assert_valid_figures). Later changes are validated as usual.
    `layout` loses its empty lists (no annotations, no shapes), as validation would drop them."""
    layout = {key: value for key, value in layout.items() if not (isinstance(value, list) and not value)}
    fig = go.Figure(traces, layout, _validate=False)
    for part in (fig, fig.layout, *fig.data):
        part._validate = True
    return fig


def styled_layout(layout: dict, title: str | None, height: int | None, width: int | None,
                  then: dict | None, min_font: int = MIN_FONT_PX) -> dict:
    """`layout` (a dict, changed) with the look of `base_layout` and then `then` merged in."""
    title_font = None
    if title and width:
        title, title_font = fit_title(title, width, min_font=min_font)
    merge_into(layout, dict(
        font=dict(FONT, size=at_least(FONT["size"], min_font), color=TEXT_COLOUR),
        paper_bgcolor="white", plot_bgcolor="white",
        colorway=list(LINE_COLOURS), hovermode="closest",
        margin=dict(l=10, r=10, t=(50 + 26 * title.count("<br>")) if title else 20, b=10),
        hoverlabel=dict(font=dict(size=14)),
    ))
    layout["template"] = copy.deepcopy(NO_TEMPLATE)  # replaced, never merged into a template already there
    if title:
        # One line at the very top: Plotly's default centres a title in the top margin, where top tick labels and
        # axis titles also go once that margin grows. Plotly misplaces a title of several lines anchored at the
        # top (by a few px above the figure): those keep the default.
        top = {} if "<br>" in title else dict(yref="container", y=1.0, yanchor="top", pad=dict(t=14))
        # Plotly's own size for a title, 1.4 times a 14 px figure's font, however large the figure's font: titles
        # are large enough on a projector already, and keep the width they were fitted to.
        merge_into(titled(layout).setdefault("title", {}), dict(
            text=title, x=0.0, xanchor="left", **top,
            font=dict(size=title_font if title_font and title_font < TITLE_FONT_PX else 1.4 * FONT["size"])))
    else:
        layout["title"] = {}  # update_layout(title=None) empties it
    if height is None:
        layout.pop("height", None)
    else:
        layout["height"] = height
    # update_xaxes / update_yaxes: the first axes always, and every other one the layout has.
    for key in dict.fromkeys(["xaxis", "yaxis", *(k for k in layout if re.fullmatch(r"[xy]axis\d*", k))]):
        merge_into(titled(layout.setdefault(key, {})), copy.deepcopy(AXIS_LOOK))
    merge_into(layout, then or {})
    for key in [k for k in layout if re.fullmatch(r"[xy]axis\d*", k)]:  # a text title from `then` replaced the
        titled(layout[key])  # axis's title: written {"text": ...}, as Plotly's validation would
    return titled(layout)


def subplot_row(cols: int, spacing: float, shared_yaxes: bool = False, titles: Sequence[str] | None = None,
                column_widths: Sequence[float] | None = None) -> dict:
    """The layout `make_subplots(rows=1, cols=cols, ...)` starts a figure with, as a new dict: its axes (trace
    `c` of column c draws on xaxis="x<c>", yaxis="y<c>", "x" and "y" for the first) and its titles.

    make_subplots costs ~13 ms a figure; its layout depends only on these arguments, so it is made once.
    """
    titled = None if titles is None else tuple(bool(title) for title in titles)  # make_subplots skips ""
    return _titled_copy(_subplots_layout(1, cols, spacing, shared_yaxes, titled,
                                         None if column_widths is None else tuple(column_widths)),
                        [t for t in titles or () if t])


def subplot_column(rows: int, spacing: float, titles: Sequence[str]) -> dict:
    """The layout `make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=spacing,
    subplot_titles=titles)` starts a figure with, as a new dict (made once for its shape, as `subplot_row`)."""
    return _titled_copy(_subplots_layout(rows, 1, spacing, True, (True,) * rows, None), titles)


def _titled_copy(layout: dict, titles: Sequence[str]) -> dict:
    """A copy of a cached subplot layout with `titles` written into its title annotations, in order."""
    layout = copy.deepcopy(layout)
    for annotation, title in zip(layout.get("annotations", ()), titles, strict=True):
        annotation["text"] = title
    return layout


@functools.lru_cache(maxsize=64)
def _subplots_layout(rows: int, cols: int, spacing: float, shared: bool, titled: tuple[bool, ...] | None,
                     column_widths) -> dict:
    """make_subplots' layout for a row (rows == 1: `spacing` between columns, y axes shared when `shared`) or a
    column (cols == 1: `spacing` between rows, x axes shared when `shared`); titles as placeholders."""
    from plotly.subplots import make_subplots

    row = rows == 1
    fig = make_subplots(rows=rows, cols=cols, shared_yaxes=shared and row, shared_xaxes=shared and not row,
                        **({"horizontal_spacing": spacing} if row else {"vertical_spacing": spacing}),
                        subplot_titles=None if titled is None else [str(i) if t else "" for i, t in enumerate(titled)],
                        column_widths=None if column_widths is None else list(column_widths))
    layout = fig.layout.to_plotly_json()
    layout.pop("template", None)  # the look replaces it
    return layout


def subplot_axes(n: int) -> dict:
    """The axes a trace in subplot `n` (from 1: the column of a `subplot_row`, the row of a `subplot_column`)
    draws on."""
    suffix = "" if n == 1 else str(n)
    return dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}")


def axis_key(name: str) -> str:
    """A trace's axis name as its layout key: "x2" -> "xaxis2", "y" -> "yaxis"."""
    return f"{name[0]}axis{name[1:]}"


def titled(settings: dict) -> dict:
    """`settings` whose "title", if a text, is written {"text": ...} (as Plotly reads it), for merging."""
    if isinstance(settings.get("title"), str):
        settings["title"] = {"text": settings["title"]}
    return settings


def merge_into(target: dict, update: dict) -> dict:
    """`update` merged into `target` as Plotly's update does: dicts merge key by key, anything else replaces."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            merge_into(target[key], value)
        else:
            target[key] = value
    return target


def escape_text(shown: str) -> str:
    """Text Plotly shows literally: "<s>" or "<pad>" would otherwise be read as markup."""
    return str(shown).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def token_texts(tokens: Sequence[str] | None, length: int) -> list[str]:
    """`token_labels`, escaped for tick text, hover and annotations."""
    return [escape_text(t) for t in token_labels(tokens, length)]


def token_axis(tokens: Sequence[str] | None, length: int, reverse: bool = False) -> dict:
    """An axis of integer positions with tokens as tick text, so a repeated token keeps its own column.

    The tick text is escaped, so "<s>" or "<pad>" shows as written.
    """
    axis = dict(tickmode="array", tickvals=list(range(length)), ticktext=token_texts(tokens, length),
                showgrid=False, zeroline=False)
    if reverse:
        axis["autorange"] = "reversed"  # first query at the top
    return axis


def cell_label(query: int, query_text: str, key: int, key_text: str, lang: str = "en") -> str:
    """Hover heading of one attention cell: query 2 “cat” → key 0 “the” (texts already escaped)."""
    return text("cell", lang, query=query, query_text=query_text, key=key, key_text=key_text)


def format_number(value: float, digits: int = 2) -> str:
    """A number as a student writes it, with a true minus sign: -2.345 -> "−2.35", -0.004 -> "0.00".

    Mask fills and other huge values in short scientific form: -1e9 -> "−1e9", -1e4 -> "−1e4",
    -2.5e9 -> "−2.5e9"; -inf -> "−∞".
    """
    if math.isinf(value):
        return f"{MINUS}∞" if value < 0 else "∞"
    if abs(value) >= 1e4:
        mantissa, exponent = f"{value:.3g}".split("e")
        return f"{mantissa}e{int(exponent)}".replace("-", MINUS)
    written = f"{value:.{digits}f}"
    return written.lstrip("-") if float(written) == 0 else written.replace("-", MINUS)


def format_numbers(values, digits: int = 2) -> np.ndarray:
    """`format_number` of every value of an array: an array of str of the same shape (a few times faster than
    formatting numpy scalars one by one)."""
    array = np.asarray(values)
    texts = [format_number(value, digits) for value in array.astype(float).ravel().tolist()]  # Python floats
    return np.array(texts, dtype=str).reshape(array.shape)


def symmetric_limit(*arrays) -> float:
    """The largest |value| over the arrays, for a colour range centred on 0 (1.0 if all are zero)."""
    limit = max((float(np.abs(a).max()) for a in arrays if np.size(a)), default=0.0)
    return limit if limit > 0 else 1.0


def as_numpy(tensor) -> np.ndarray:
    """A trace entry (torch tensor) or array-like as a numpy array."""
    return tensor.numpy() if hasattr(tensor, "numpy") else np.asarray(tensor)


class AttentionArrays(NamedTuple):
    """One layer of one attention kind for batch item 0, as numpy (float64, mask bool).

    weights, scores, masked_scores (heads, q_len, k_len); mask (q_len, k_len), True = may attend.
    """

    weights: np.ndarray
    scores: np.ndarray
    masked_scores: np.ndarray
    mask: np.ndarray

    def head(self, head: int) -> AttentionArrays:
        """The arrays of one head: weights, scores, masked_scores (q_len, k_len)."""
        head = check_index(head, self.weights.shape[0], "head")
        return AttentionArrays(self.weights[head], self.scores[head], self.masked_scores[head], self.mask)


def attention_arrays(trace: Trace, kind: str, layer: int) -> AttentionArrays:
    """The recorded weights, scores, masked scores and mask of one layer, batch item 0.

    Every builder reads attention through here, so an unknown kind or a layer the trace
    does not hold is a ValueError naming the choices. A trace without a recorded mask
    allows every key; one without scores or masked scores (built by hand) gets NaN for them.
    """
    weights = as_numpy(recorded_attention(trace, kind, layer, "weights"))[0].astype(np.float64)  # (heads, q_len, k_len)
    layer = int(layer)  # a whole number in range: recorded_attention checked it

    def plane(leaf: str) -> np.ndarray:
        recorded = trace.get(attention_name(kind, layer, leaf))
        return np.full_like(weights, np.nan) if recorded is None else as_numpy(recorded)[0].astype(np.float64)

    mask = as_numpy(recorded_mask(trace, kind, layer))  # (q_len, k_len)
    return AttentionArrays(weights, plane("scores"), plane("masked_scores"), mask)


def all_layers(trace: Trace, kind: str) -> list[AttentionArrays]:
    """`attention_arrays` of every layer of `kind`, first to last; ValueError if the trace holds none."""
    first = attention_arrays(trace, kind, 0)
    return [first, *(attention_arrays(trace, kind, layer) for layer in range(1, trace.n_layers(kind)))]


def check_cell(cell: tuple[int, int], rows: int, cols: int, names: tuple[str, str],
               argument: str = "highlight") -> tuple[int, int]:
    """A pair such as (query, key) or (layer, head) as ints, each checked by `check_index`."""
    if not isinstance(cell, tuple | list) or len(cell) != 2:
        raise ValueError(f"{argument} must be a pair ({names[0]}, {names[1]}), got {cell!r}.")
    return check_index(cell[0], rows, names[0]), check_index(cell[1], cols, names[1])


def mask_value(trace) -> float:
    """The fill for blocked scores in the model that made this trace (-1e9 when unknown)."""
    return float(getattr(trace.config, "mask_value", -1e9))


# What an attention figure can colour: the weights, the scaled scores QKᵀ/√d_k, or the scores after masking.
# Their names are the words `cell_value.<value>` (one value) and `values.<value>` (many).
ATTENTION_VALUES = ("weights", "scores", "masked_scores")


def check_choice(kind: str, value: str = "weights") -> None:
    """Raise ValueError naming the choices for an unknown attention kind or value."""
    check_kind(kind)
    if not isinstance(value, str) or value not in ATTENTION_VALUES:
        raise ValueError(f"value must be one of {', '.join(ATTENTION_VALUES)}, got {value!r}.")


def value_plane(value: str, arrays: AttentionArrays) -> tuple[np.ndarray, float, float, str]:
    """(z, zmin, zmax, colour scale) for drawing `value` of `arrays` (any leading dimensions).

    Weights use a fixed 0-1 range; scores and masked scores a range symmetric about 0
    taken from the allowed cells only, so a fill such as -1e9 never stretches the colours.
    """
    if value == "weights":
        return arrays.weights, 0.0, 1.0, SEQUENTIAL
    if value in ("scores", "masked_scores"):
        scores = arrays.scores
        allowed = np.broadcast_to(arrays.mask, scores.shape) if value == "masked_scores" else True
        limit = symmetric_limit(scores[allowed & np.isfinite(scores)])
        return getattr(arrays, value), -limit, limit, DIVERGING
    raise ValueError(f"value must be one of {', '.join(ATTENTION_VALUES)}, got {value!r}.")


# Click targets: a scatter over heatmap cells, because Streamlit reports selected scatter points but not
# heatmap cells. Invisible: hover and clicks find a point by distance, not by its pixels.
CLICK_OPACITY = 0.01
CLICK_COLOUR = "rgba(255, 255, 255, 0)"


def target_marker(size: float) -> dict:
    """The marker of click targets `size` px wide (the distance a hover or click finds them from).

    Plotly draws one of them (`maxdisplayed`): hover, click and selection search every point by distance all the
    same, and a 32 x 32 head's 1,024 SVG markers, each styled one by one, were the largest part of its redraw."""
    return dict(symbol="square", size=size, opacity=CLICK_OPACITY, color=CLICK_COLOUR, maxdisplayed=1)


def selected_pair(event, size: int = 2) -> tuple[int, ...] | None:
    """The first clicked point's customdata [a, b] (or [a] for size 1) as ints, from a Streamlit selection event."""
    selection = event.get("selection") if isinstance(event, Mapping) else None
    points = selection.get("points") if isinstance(selection, Mapping) else None
    for point in points or ():
        data = point.get("customdata") if isinstance(point, Mapping) else None
        if isinstance(data, Mapping):  # a typed array that went through JSON: {"0": a, "1": b}
            data = [data.get(str(i)) for i in range(size)]
        if isinstance(data, list | tuple) and len(data) == size and all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in data):
            return tuple(int(v) for v in data)
    return None
