"""Break it, Compare and Inside the layers in a real Chromium: drawn, measured, and the switches in the link."""

from pathlib import Path

import pytest

from devtools.browser import choose_option, exceptions, new_page, open_app, rerun_after, wait_for_idle

pytestmark = pytest.mark.browser  # skipped, saying why, where Chromium is missing (conftest.py)



def metric_values(page) -> list[str]:
    return page.locator("[data-testid=stMetricValue]").all_inner_texts()


def test_break_it_switches_positions_off_and_the_exact_match_falls(app_url, browser):
    page = new_page(browser)
    open_app(page, f"{app_url}/break_it?breaks=no_positions")
    exact = metric_values(page)[0]
    assert exact.endswith("%") and int(exact[:-1]) < 20, exact  # reverse without positions: order is lost
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 2")  # grid, difference
    assert "breaks=" in page.url
    assert exceptions(page) == []
    page.context.close()


def test_compare_draws_a_b_and_their_difference(app_url, browser):
    page = new_page(browser)
    open_app(page, f"{app_url}/compare?b_weights=pretrained&b_breaks=no_scale")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 3")
    assert exceptions(page) == []
    page.context.close()


def test_inside_the_layers_draws_the_residual_stream_the_ffn_and_the_logit_lens(app_url, browser):
    page = new_page(browser)
    open_app(page, f"{app_url}/layers")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 3")
    assert exceptions(page) == []
    page.context.close()


def test_the_attention_page_shows_head_scores_rollout_and_the_downloads(app_url, browser):
    page = new_page(browser)
    open_app(page, f"{app_url}/attention?kind=encoder_self")
    page.get_by_text("Attention rollout (an approximation)").first.wait_for()
    wait_for_idle(page)  # the table and the buttons come later in the same run than the rollout's heading
    assert page.locator("[data-testid=stDataFrame]").count() == 1  # the sortable head-score table
    for label in ("The trace (.npz)", "Attention weights (.csv)", "This page's figures (HTML, offline)"):
        assert page.get_by_role("button", name=label).count() == 1, label
    with page.expect_download() as download:
        page.get_by_role("button", name="This page's figures (HTML, offline)").click()
    html = Path(download.value.path()).read_text()
    assert html.count("Plotly.newPlot") >= 4 and "<script src=" not in html
    assert exceptions(page) == []
    page.context.close()


TABLE_HAS_ALIGNMENT = """() => (document.querySelector('[data-testid=stDataFrame]')?.textContent || '')
    .toLowerCase().includes('alignment')"""


def test_a_new_kind_redraws_the_entropy_head_scores_and_rollout_below_the_explorer(app_url, browser):
    """They are a fragment of their own, which a change of layer, head or value does not rerun: a change of kind
    must rerun it too."""
    page = new_page(browser)
    open_app(page, f"{app_url}/attention")  # cross-attention: no rollout, and a table with gold alignment
    cross_only = page.get_by_text("Rollout chains square self-attention maps", exact=False)
    cross_only.wait_for()
    page.wait_for_function(TABLE_HAS_ALIGNMENT)
    rerun_after(page, lambda: choose_option(page, page.locator(".st-key-kind"), "Encoder self-attention"),
                until="document.querySelectorAll('.st-key-attention_rollout .js-plotly-plot').length === 1")
    assert cross_only.count() == 0
    page.wait_for_function(f"() => !({TABLE_HAS_ALIGNMENT})()", timeout=30_000)
    page.wait_for_function("() => (document.querySelector('.st-key-attention_entropy .js-plotly-plot')"
                           "?._fullLayout.title.text || '').includes('Encoder self-attention')", timeout=30_000)
    rerun_after(page, lambda: choose_option(page, page.locator(".st-key-value"), "scaled scores q·k/√d_k"))
    assert page.locator(".st-key-attention_rollout .js-plotly-plot").count() == 1  # the explorer's rerun kept it
    assert exceptions(page) == []
    page.context.close()
