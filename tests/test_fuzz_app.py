"""Random links on random pages (Hypothesis + AppTest): no traceback, no slow rerun, bounded memory.

200 links in a normal run; `TV_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz_app.py` for the long run.
"""

import os
import time
from pathlib import Path

import pytest
from helpers import shown
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_app import run_page

from transformer_viz.app.frame.navigation import PAGES as NAVIGATION
from transformer_viz.app.server.figure_cache import FIGURE_CACHE_BYTES
from transformer_viz.app.server.models import run_cache_bytes
from transformer_viz.app.server.state import VIEW_FIELDS
from transformer_viz.config import ARCHITECTURES, POSITIONAL_ENCODINGS
from transformer_viz.data.tasks import LM_TASKS, TASKS

PAGES = tuple(NAVIGATION)  # every page of the app
# Ids the app writes, labels older links carry, next to garbage: numbers of every size, any text, hostile Markdown.
LABELS = ("encoder_self", "cross", "zh", "en-fr", "random", "trained", "checkpoint:tiny", "true", "-1e+09", "-inf",
          "Encoder self-attention", "Cross-attention (decoder → encoder)", "中文", "English", "random (untrained)",
          "trained by you on the Training page", "English → French", "−1e4", "−∞", "1", "2", "6", "8", "16", "64",
          "256", "0: <bos>", "3: l", "— (click a cell)", "the [x](https://evil.example) **y** $z$",
          *ARCHITECTURES, *POSITIONAL_ENCODINGS, "toy", "hf", *TASKS, *LM_TASKS, "pretrained", "false")
SMALL = st.integers(-2, 9).map(str)  # layers, heads, steps, positions: where the edges are
VALUES = st.one_of(SMALL, SMALL, st.sampled_from(LABELS), st.integers(-10**12, 10**12).map(str),
                   st.floats(allow_nan=True, allow_infinity=True).map(str), st.text(max_size=70))
# The fields whose combinations matter most, drawn more often than the others.
HOT = ("n_encoder_layers", "n_decoder_layers", "n_heads", "d_model", "max_len", "kind", "layer", "head", "query",
       "cell_query", "cell_key", "step", "pad", "weights", "src_text", "tgt_text", "task", "lesson_step",
       # every field of the sidebar: the model's form and variants, its weights and where it comes from
       "architecture", "positional", "norm_first", "scale_embeddings", "embed_norm", "mask_value", "seed", "source",
       "lang", "present", "d_ff")
LINKS = st.dictionaries(st.one_of(st.sampled_from(HOT), st.sampled_from(VIEW_FIELDS)), VALUES, max_size=6)
# Each shape setting at the edges of its widget's range, on every page.
EDGES = [(field, value) for field, values in {"n_encoder_layers": ("1", "6"), "n_decoder_layers": ("1", "6"),
                                              "n_heads": ("1", "16"), "d_model": ("2", "256"), "max_len": ("64",),
                                              "d_ff": ("16", "512")}.items() for value in values]
# What one run of a page may cost, in CPU seconds of this process (not wall time: a busy machine changes that).
RERUN_CPU_SECONDS = 10.0
RSS_SLACK = 512 * 2**20  # beyond the bounded caches: models, allocator, Streamlit


def rss_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


START_RSS = rss_bytes()


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("TV_FUZZ_EXAMPLES", 200)), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(page=st.sampled_from(PAGES), link=LINKS, shape_open=st.booleans())
def test_no_link_breaks_a_page(page, link, shape_open):
    """The sidebar's shape widgets drawn (opened) or only checked (folded): a link gets through neither."""
    started = time.process_time()
    at = run_page(page, link=link, shape_open=shape_open)
    cpu = time.process_time() - started
    assert not at.exception, (page, link, shape_open, [e.value for e in at.exception])
    assert cpu < RERUN_CPU_SECONDS, (page, link, cpu)
    # The figure cache counts estimated bytes; Plotly's own objects around them add up to as much again.
    assert rss_bytes() - START_RSS < run_cache_bytes() + 2 * FIGURE_CACHE_BYTES + RSS_SLACK


# The pages that draw something per layer or per head, or build variants of the model: where a shape's edges show.
# (test_app.py's sweep renders every page; here each edge is also a valid link.)
SHAPE_PAGES = ("attention", "layers", "break_it", "compare")


@pytest.mark.parametrize("page", SHAPE_PAGES)
def test_the_pages_drawn_per_layer_and_head_at_the_edges_of_every_shape_setting(page):
    for field, value in EDGES:
        at = run_page(page, link={field: value})
        assert not at.exception, (page, field, value, [e.value for e in at.exception])
        assert not at.sidebar.warning or field == "d_model", (page, field, value)  # each edge is a valid link


@pytest.mark.parametrize("shape_open", (False, True))
@pytest.mark.parametrize("text", ("inf", "-inf", "nan", "1e999"))
def test_a_number_that_is_not_finite_is_reset_and_named(text, shape_open):
    """Whether the sidebar's shape widgets are drawn (opened) or only check the session's values (folded)."""
    at = run_page("attention", link={"d_model": text, "seed": text}, shape_open=shape_open)
    assert not at.exception, [e.value for e in at.exception]
    assert any("d_model" in w.value and "seed" in w.value for w in at.sidebar.warning)
    assert shown(at, "d_model") == 64 and shown(at, "seed") == 0
