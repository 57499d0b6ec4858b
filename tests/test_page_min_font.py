"""The pages' figures get presenter mode's smallest font by themselves: `PageContext.figure` / `.figures` add
`min_font=` for every builder that takes one (and only for those), so it is part of the shared figure cache's key."""

import pytest

from transformer_viz.app.pages import decoding, head, overview
from transformer_viz.app.session import page
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.layers import residual_figure
from transformer_viz.figures.masks import mask_figures


@pytest.fixture
def presenting(monkeypatch):
    monkeypatch.setattr(page, "figure_min_font", lambda: 16)


def no_min_font(trace, *, lang: str):
    return trace


def test_a_builder_that_takes_min_font_gets_the_sessions(presenting):
    for builder in (attention_grid, residual_figure, mask_figures):
        assert page.with_min_font(builder, {"width": 790}) == {"width": 790, "min_font": 16}
    assert page.with_min_font(attention_grid, {"min_font": 10}) == {"min_font": 10}  # a page's own choice stays


def test_a_builder_without_min_font_is_called_as_before(presenting):
    assert page.with_min_font(no_min_font, {"width": 790}) == {"width": 790}


def test_the_pages_own_figure_helpers_take_min_font():
    """Built through `ctx.figures`: without the keyword they would draw screen-sized text on a projector."""
    for helper in (decoding.decoding_figures, head.head_figures, overview.diagram):
        assert page.takes_min_font(helper), helper.__qualname__
