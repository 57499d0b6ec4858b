"""The extra checkpoints' listing that every sidebar reads: two sessions reading it as it expires both get it.

Streamlit's TTL cache checked that the listing was there, then read it: when the listing expired between the two
(the clock read twice), the read raised KeyError on a student's page (about once in 2,589 runs of a fuzz)."""

import threading

import streamlit as st
import torch
from streamlit.runtime.caching import cache_utils

from transformer_viz import Transformer, get_task, model_config_for
from transformer_viz.app.server import checkpoints
from transformer_viz.weights.pretrained import CHECKPOINTS_ENV, save_pretrained


class Clock:
    """A monotonic clock the test sets: `now`, and at most once `then`, which every reading after the next sees."""

    def __init__(self, now: float):
        self.now, self.then, self._lock = now, None, threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            now = self.now
            if self.then is not None:
                self.now, self.then = self.then, None
            return now


def test_two_sessions_reading_the_listing_as_it_expires_both_get_it(tmp_path, monkeypatch):
    torch.manual_seed(0)
    model = Transformer(model_config_for(get_task("reverse"), d_model=16, n_heads=2, d_ff=32))
    save_pretrained(model, get_task("reverse"), tmp_path, name="tiny")
    monkeypatch.setenv(CHECKPOINTS_ENV, str(tmp_path))
    clock = Clock(now=1000.0)
    monkeypatch.setattr(cache_utils, "TTLCACHE_TIMER", clock)  # the clock of Streamlit's TTL caches (made anew)
    monkeypatch.setattr(checkpoints, "monotonic", clock, raising=False)  # the listing's own clock
    st.cache_resource.clear()
    try:
        assert [extra.name for extra in checkpoints.extras()] == ["tiny"]  # listed at 1000
        expires = 1000.0 + checkpoints.LISTED_SECONDS
        clock.now, clock.then = expires - 0.001, expires + 0.001  # it expires between two readings of the clock
        seen, errors = [], []
        ready = threading.Barrier(2)

        def sidebar() -> None:
            ready.wait()
            try:
                seen.append([extra.name for extra in checkpoints.extras()])
            except Exception as error:  # what a student's page would have shown
                errors.append(repr(error))

        readers = [threading.Thread(target=sidebar) for _ in range(2)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        assert errors == [] and seen == [["tiny"], ["tiny"]]
    finally:
        st.cache_resource.clear()  # no cache keeps the test's clock
