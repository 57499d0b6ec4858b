"""A figure's spec as the browser should get it: drawn once per change, not twice.

Streamlit (1.67) mounts a chart anew for every new spec and hands Plotly.js the figure twice: once as soon as it
mounts, and again a moment later, as a JSON copy with the chart's width and, for a chart that selects points, its
click and drag modes. Plotly.react then draws every trace again unless it can tell that nothing changed. It cannot
when the spec holds
  * typed arrays (plotly.py writes numpy arrays as base64, which Plotly.js decodes into a new Float32Array each
    time; it compares only plain arrays, and those only under a `layout.datarevision`),
  * `layout.meta` or `layout.template` (values of any type: never compared, so always "changed"),
  * click or drag modes the chart's own spec did not have.
The second draw costs as much as the first: for the Attention page's grid and head 20 to 35 ms of a browser's main
thread after every change, 60 ms at 6 × 8 heads × 32 tokens (`bench/bench_ui.py`). `browser_spec` writes a
figure's dict so that Plotly.react finds nothing new.

Numbers as JSON text are about twice as long as base64, and Streamlit serializes every chart of a rerun again (the
browser then gets a reference to what it has): the arrays of a figure with more than MAX_LISTED_NUMBERS numbers
stay binary. Such a figure is drawn twice, but a server shared by a class does not pay for it on every rerun
(a 6 × 8 × 32 grid: 1.2 MB of JSON instead of 0.75 MB, +9 ms per rerun).
"""

from __future__ import annotations

import base64
import hashlib

import numpy as np

from transformer_viz.figures.look import NO_TEMPLATE

MAX_LISTED_NUMBERS = 16_384  # ~200 kB of JSON text, ~3 ms to serialize
# What Streamlit sets on a chart that selects points (PlotlyChart.tsx), when the spec does not say it.
POINT_SELECTION = {"clickmode": "event+select", "dragmode": "pan"}


def browser_spec(figure: dict) -> dict:
    """`figure` (a figure's dict as `go.Figure.to_dict` writes it; changed) for Plotly.js to redraw only what
    changed: plain arrays (up to MAX_LISTED_NUMBERS numbers), a data revision that changes with its data, and no
    server-side `meta` or empty template ("none": the same look as no template)."""
    listed = sum(typed_size(typed) for typed in typed_arrays(figure["data"])) <= MAX_LISTED_NUMBERS
    figure["data"] = [plain_arrays(trace, listed) for trace in figure["data"]]
    revision = hashlib.blake2b(repr(figure["data"]).encode(), digest_size=8).hexdigest()  # lists: every item
    layout = figure.setdefault("layout", {})
    layout.pop("meta", None)  # hints for the server (figures/fit.py: TEXT_MIN_WIDTH), not for Plotly.js
    if layout.get("template") == NO_TEMPLATE:
        del layout["template"]
    layout["datarevision"] = revision
    return figure


def selecting(figure: dict) -> dict:
    """A copy of browser spec `figure` for a chart that selects points: Streamlit's click and drag modes written
    in, so that it does not add them after the first draw (its layout is copied, its data shared)."""
    return {**figure, "layout": {**figure.get("layout", {}), **POINT_SELECTION}}


def plain_arrays(node, listed: bool = True):
    """`node` with every numpy array plotly.py left as it is (text, objects) as a list, and when `listed` every typed
    array ({"dtype", "bdata", "shape"}) as a (nested) list of numbers: JSON's own types only (orjson's fast path)."""
    if isinstance(node, np.ndarray):
        return node.tolist()
    if isinstance(node, dict):
        if is_typed(node):
            return typed_array_as_list(node) if listed else node
        return {key: plain_arrays(value, listed) for key, value in node.items()}
    if isinstance(node, list):
        return [plain_arrays(value, listed) for value in node]
    return node


def typed_arrays(node):
    """The typed arrays in `node` (a figure's data, nested dicts and lists)."""
    if isinstance(node, dict):
        if is_typed(node):
            yield node
        else:
            for value in node.values():
                yield from typed_arrays(value)
    elif isinstance(node, list):
        for value in node:
            yield from typed_arrays(value)


def is_typed(node: dict) -> bool:
    return "bdata" in node and "dtype" in node


def typed_size(typed: dict) -> int:
    """How many numbers typed array `typed` holds, counted from its base64 text (4 characters per 3 bytes, "="
    padding the last group) without decoding it."""
    text = typed["bdata"]
    return (len(text) * 3 // 4 - text[-2:].count("=")) // np.dtype(typed["dtype"]).itemsize


def typed_array_as_list(typed: dict):
    """One typed array as nested lists: whole numbers as they are, floats as the shortest decimals that read back
    as the same float32 (`shortest_float32`; what Plotly.js would have read from the typed array, in a hover too)
    and NaN as None (a gap, as NaN is). An array with ±inf stays typed (JSON has no infinity)."""
    values = np.frombuffer(base64.b64decode(typed["bdata"]), dtype=typed["dtype"])
    if "shape" in typed:
        values = values.reshape([int(size) for size in str(typed["shape"]).split(",")])
    if values.dtype.kind != "f":
        return values.tolist()
    if np.isinf(values).any():
        return typed
    return shortest_float32(values).tolist()


def shortest_float32(values: np.ndarray) -> np.ndarray:
    """`values` (no ±inf) as float64s whose repr is the shortest decimal (7 to 9 significant digits) that reads
    back as the same float32; NaN as None (an object array). A float64 array is first made float32: the
    precision every figure's numbers have."""
    exact = values.astype(np.float32)
    finite = np.isfinite(exact)
    best = exact.astype(np.float64)  # the float32's exact value: 9 significant digits always read back as it
    for digits in (8, 7):  # fewer wherever they still read back as the same float32
        shorter = round_significant(best, digits)
        best = np.where(shorter.astype(np.float32) == exact, shorter, best)
    return np.where(finite, round_significant(best, 9), None)


def round_significant(values: np.ndarray, digits: int) -> np.ndarray:
    """`values` (float64) rounded to `digits` significant digits, as the float64s nearest those decimals (their
    repr is the short decimal, for all but the smallest and largest magnitudes); NaN and subnormals as they are."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        magnitude = np.floor(np.log10(np.abs(values)))
        decimals = np.where(np.isfinite(magnitude), digits - 1 - magnitude, 0)
        scale = 10.0 ** np.abs(decimals)  # exact up to 10 ** 22: divide by it, or multiply by it
        out = np.where(decimals >= 0, np.round(values * scale) / scale, np.round(values / scale) * scale)
    return np.where(np.isfinite(out), out, values)
