"""Charts on the page: how wide the main column is, the smallest text a figure may draw, and `chart`, which every
figure is drawn through."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.server.figure_cache import shared
from transformer_viz.app.session.words import lang
from transformer_viz.figures.alternative import TextAlternative, text_alternative
from transformer_viz.figures.fit import MIN_FONT_PX, PROJECTOR_FONT_PX, TEXT_MIN_WIDTH

# The narrowest the main column gets, in px: presenter mode at 150 % zoom of a 1280×720 projector (796 px; the
# sidebar open at 1280 px leaves 820). Figures are laid out for the narrowest width they are drawn at, so that
# their labels fit there, and only grow wider elsewhere. Cell numbers that need more room are written for up to
# the widest (a full-HD screen without the sidebar) and shown only where they fit (hide_cell_numbers_below).
MAIN_WIDTH, MAX_MAIN_WIDTH = 790, 1880


def chart(fig, key: str, on_select: str | Callable = "ignore"):
    """st.plotly_chart with the figure's own colours (not Streamlit's theme) and a compact mode bar whose
    camera saves a PNG at twice the size (sharp on a slide). The figure joins the view's download. With
    `on_select`, a click selects one point (a cell, a tile, a block)."""
    fig = shared(fig)  # margins settled, its dict made once (figure_cache.SharedFigure)
    st.session_state.setdefault(state.VIEW_FIGURES, {})[key] = fig
    hide_cell_numbers_below(fig, key)
    drawn = st.plotly_chart(
        fig if on_select == "ignore" else fig.selecting_points(), key=key, theme=None, on_select=on_select,
        selection_mode="points",
        config={"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"],
                "toImageButtonOptions": {"format": "png", "scale": 2, "filename": key}},
    )
    st.html(alternative_html(fig))
    return drawn


ALTERNATIVE = "tv-alt"  # the class of a figure's text alternative: read by screen readers, not drawn (main.py)
VISUALLY_HIDDEN = "position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap"


def alternative_html(fig) -> str:
    """The figure's text alternative (figures/alternative.py) as HTML a screen reader walks: its sentence, then
    a table per part (headers scoped to their rows and columns). Made once per shared figure and language."""
    made = fig.__dict__.setdefault("_alternatives", {})
    if lang() not in made:
        made[lang()] = _html(text_alternative(fig, lang()))
    return made[lang()]


def _html(alternative: TextAlternative) -> str:
    parts = [f'<div class="{ALTERNATIVE}"><p>{html.escape(alternative.description)}</p>']
    for table in alternative.tables:
        head = "".join(f'<th scope="col">{html.escape(column)}</th>' for column in table.columns)
        rows = "".join(f'<tr><th scope="row">{html.escape(row)}</th>' + "".join(f"<td>{html.escape(cell)}</td>"
                                                                             for cell in cells) + "</tr>"
                       for row, cells in table.rows)
        parts.append(f"<table><caption>{html.escape(table.caption)}</caption><thead><tr><td></td>{head}</tr>"
                     f"</thead><tbody>{rows}</tbody></table>")
    return "".join(parts) + "</div>"


def hide_cell_numbers_below(fig, key: str) -> None:
    """Cell numbers that fit only from some figure width on (layout.meta[TEXT_MIN_WIDTH]) are hidden in a
    narrower chart: by a CSS container query on the chart's own element, which knows its width (the server
    does not: 150 % browser zoom, a sidebar or a projector change it)."""
    meta = fig.layout.meta
    min_width = meta.get(TEXT_MIN_WIDTH) if isinstance(meta, dict) else None
    if min_width and re.fullmatch(r"[\w-]+", key):
        box = f".st-key-{key}"
        st.html(f"<style>{box}{{container-type:inline-size}}"
                f"@container (width < {int(min_width)}px){{{box} g.heatmap-label{{display:none}}}}</style>")



def figure_min_font() -> int:
    """The smallest text a figure of this session may draw, px: larger in presenter mode. Builders take it as
    `min_font=`, so that it is part of what the figure is built with (and of its key in the shared figure cache)."""
    return PROJECTOR_FONT_PX if st.session_state.get(state.PRESENT) else MIN_FONT_PX
