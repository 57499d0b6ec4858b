"""Margins settled in advance (figures/margins.py) leave room for everything Plotly itself would make room for.

Every chart the app draws on its pages (English, and 中文 in presenter mode with a decoder-only model) is drawn in
Chromium by Plotly with the margins we wrote, but with automargin back on: Plotly then grows a margin wherever a
tick label, axis title, colour bar or legend would be cut. It must never need to: a label is never cut, and the
figure is drawn once.
"""

import json
from pathlib import Path

import plotly
import pytest
from test_app import run_page

from transformer_viz.figures.margins import AXIS_KEY

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
PAGES = ("embeddings", "attention", "masks", "head", "layers", "decoding", "attribution", "break_it", "compare")
LINKS = ({}, {"lang": "zh", "present": "true", "architecture": "decoder_only"})
WIDTHS = (600, 1200)  # px: a narrow main column at 150 %, and a wide screen
DRAWN_MARGINS = """async ([spec, width]) => {
  const div = document.createElement('div'); div.style.width = width + 'px';
  document.body.replaceChildren(div);
  await Plotly.newPlot(div, spec.data, spec.layout, {staticPlot: true});
  const size = div._fullLayout._size;
  return {l: size.l, r: size.r, t: size.t, b: size.b};
}"""


def app_charts():
    for page in PAGES:
        for link in LINKS:
            at = run_page(page, link=link)
            assert not at.exception, at.exception
            for chart in at.get("plotly_chart"):
                yield f"{page} {link} {chart.proto.id.rsplit('-', 1)[-1]}", json.loads(chart.proto.spec)


def with_automargin(spec: dict) -> dict:
    for key, axis in spec["layout"].items():
        if AXIS_KEY.match(key) and isinstance(axis, dict):
            axis["automargin"] = True
    return spec


def test_plotly_never_needs_wider_margins_than_we_set(browser):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.set_content("<body></body>")
    page.add_script_tag(path=str(PLOTLY_JS))
    grown, drawn = [], 0
    for name, spec in app_charts():
        ours = spec["layout"].get("margin", {})
        assert all(axis.get("automargin") is False for key, axis in spec["layout"].items() if AXIS_KEY.match(key))
        for width in WIDTHS:
            plotly_own = page.evaluate(DRAWN_MARGINS, [with_automargin(json.loads(json.dumps(spec))), width])
            drawn += 1
            grown += [f"{name} at {width} px: {side} {ours.get(side)} -> {plotly_own[side]}"
                      for side in "lrtb" if plotly_own[side] > ours.get(side, 0) + 1]
    assert drawn > 50
    assert not grown, "\n".join(grown)
