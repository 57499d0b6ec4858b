"""Clicks on a figure: invisible click targets over heatmap cells and the point a Streamlit selection names."""

from __future__ import annotations

from collections.abc import Mapping

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
