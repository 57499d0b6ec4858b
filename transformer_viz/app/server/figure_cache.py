"""Figures shared by the whole class: an LRU bounded in bytes, built once when a class asks for the same new figure."""

from __future__ import annotations

import contextlib
import sys
import threading

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from cachetools import LRUCache
from plotly.basedatatypes import BaseFigure

from transformer_viz.app.server.browser_spec import browser_spec, selecting
from transformer_viz.figures.margins import settle_margins

# The figures one server keeps for all its sessions, bounded in bytes as figure_bytes estimates them (Plotly's
# objects around them add up to as much again): at the default shape an entry holds 50 KiB to 2 MiB, so a class's
# views stay; at the largest shape the server allows, Inside one head's nine figures hold ~36 MiB.
FIGURE_CACHE_BYTES = 128 * 2**20


def figure_bytes(figures, sample: int = 16) -> int:
    """About the memory a figure (or a list, tuple or dict of them) holds: its strings, numbers, arrays and
    containers as Plotly keeps them (its JSON is no measure: numbers stay compact arrays, text does not).
    A long list is estimated from `sample` of its items (a figure's lists hold items alike)."""
    total, stack = 0.0, [(figures, 1.0)]
    while stack:
        item, weight = stack.pop()
        if isinstance(item, BaseFigure):  # its properties as Plotly keeps them (to_plotly_json would copy them)
            props = getattr(item, "_data", None), getattr(item, "_layout", None)
            stack.append((item.to_plotly_json() if None in props else props, weight))
            if isinstance(item, SharedFigure):  # and the dict it sends, made now (numbers in lists: 32 bytes each)
                stack.append((item.to_dict(), weight))
            continue
        if isinstance(item, np.ndarray) and item.dtype != object:
            total += weight * item.nbytes
            continue
        total += weight * sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend((value, weight) for value in item.values())
        elif isinstance(item, list | tuple | np.ndarray):
            items = item.ravel() if isinstance(item, np.ndarray) else item
            if len(items) > sample:
                share = len(items) / sample
                stack.extend((items[int(i * share)], weight * share) for i in range(sample))
            else:
                stack.extend((value, weight) for value in items)
    return int(total)


class SharedFigure(go.Figure):
    """A figure of the figure cache: shared by every session and never changed, so its dict is made once, with
    its margins settled (figures/margins.py: drawn once in the browser, not again for each margin that grows) and
    written for one draw per change (browser_spec.py).

    st.plotly_chart asks a figure for `to_dict()` on every rerun, a deep copy of all its data (a few ms for a
    page); it only reads the dict (plotly.io.to_json drops trace uids, which these figures have none of)."""

    def to_dict(self):
        shared = self.__dict__.get("_shared_dict")
        if shared is None:
            shared = self.__dict__["_shared_dict"] = browser_spec(settle_margins(super().to_dict()))
        return shared

    def selecting_points(self) -> SharedFigure:
        """This figure as a chart that selects points shows it (browser_spec.selecting), made once."""
        view = self.__dict__.get("_selecting_view")
        if view is None:
            view = self.__dict__["_selecting_view"] = _SelectingView(selecting(self.to_dict()))
        return view


class _SelectingView(SharedFigure):
    """A figure's dict, ready, for st.plotly_chart (which only calls `to_dict()` on a figure): no go.Figure is built
    or validated again."""

    def __init__(self, spec: dict):
        self.__dict__["_shared_dict"] = spec


def shared(figures):
    """`figures` (a figure, or a list, tuple or dict holding figures) with every go.Figure made a SharedFigure."""
    if type(figures) is go.Figure:
        figures.__class__ = SharedFigure  # the same object: no copy, no new validation
    elif isinstance(figures, list | tuple):
        for item in figures:
            shared(item)
    elif isinstance(figures, dict):
        for item in figures.values():
            shared(item)
    return figures


@st.cache_resource(show_spinner=False)
def _figure_cache() -> tuple[LRUCache, threading.Lock, dict]:
    """The figures of every session on this server, least recently used first out, bounded in bytes; and a
    lock per figure being built, so that a class asking for the same new figure builds it once."""
    return LRUCache(maxsize=FIGURE_CACHE_BYTES, getsizeof=lambda entry: entry[1]), threading.Lock(), {}


def figure(run_key: tuple, trace, builder, *args, **kwargs):
    """builder(trace, *args, **kwargs), built once per run and arguments and shared by all sessions.

    Building a Plotly figure costs milliseconds to tens of ms of validation; a class toggling between views
    (weights / scores, one head / another, back to a page) gets them back at once. Figures are never mutated.
    Every argument is part of the key, `lang` too: a figure drawn in English is never served in Chinese.
    Arguments are hashable (tuples, not lists); `trace` is whatever run_key names (not part of the key).
    """
    key = (run_key, f"{builder.__module__}.{builder.__qualname__}", args, tuple(sorted(kwargs.items())))
    cache, lock, building = _figure_cache()
    with lock:
        found = cache.get(key)
        if found is None:
            key_lock = building.setdefault(key, threading.Lock())
    if found is not None:
        return found[0]
    with key_lock:  # another session building it: wait for that one
        with lock:
            found = cache.get(key)
        if found is None:
            try:
                built = shared(builder(trace, *args, **kwargs))
                size = figure_bytes(built)  # outside the lock: other sessions read the cache meanwhile
                with lock, contextlib.suppress(ValueError):  # a figure larger than the whole budget is not kept
                    cache[key] = (built, size)
                found = (built,)
            finally:
                with lock:
                    building.pop(key, None)
    return found[0]

