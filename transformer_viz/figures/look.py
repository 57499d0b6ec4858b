"""The look every figure shares (white background, light grid, readable font, fitted title), and figures built
without Plotly validating them twice.

Figures are pure Plotly: numpy arrays or Trace entries in, go.Figure out.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio

from transformer_viz.figures.colours import GRID_COLOUR, LINE_COLOURS, TEXT_COLOUR
from transformer_viz.figures.fit import MIN_FONT_PX, TITLE_FONT_PX, at_least, fit_title

FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=14)

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
