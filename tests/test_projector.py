"""Presenter mode as a class sees it on a 1280×720 projector (and at 150 % browser zoom), in a real Chromium.

Measured, not looked at: the corners of every text of every figure (devtools/text_boxes.py) and of every text
of the page (a Range over each text node), the boxes of the way out, of Plotly's toolbar while the mouse is on
a figure and of the lesson's controls once a step is scrolled to its end. "150%" is a 853×480 CSS px viewport at
device scale 1.5, as in tests/test_presenter.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import pytest

from devtools.browser import RUN_COUNTER, exceptions, open_app, rerun_after, wait_for_figures
from devtools.text_boxes import FIGURE_TEXTS, PAGE_WIDTH, Figure, figure_problems, page_problems, problem_table
from transformer_viz.figures.fit import PROJECTOR_FONT_PX

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # browser: skipped, saying why, without Chromium


@dataclass(frozen=True)
class Size:
    width: int
    height: int
    scale: float


SIZES = {"1280x720": Size(1280, 720, 1.0), "150%": Size(853, 480, 1.5)}
LANGUAGES = {"en": "", "zh": "中文"}
FIGURE_PAGES = ("attention", "compare", "masks")
# Every other page with figures and a few lesson steps, in one language each unless the other one lays text out
# differently enough to matter (the diagram's wrapped blocks, the sampling legend, the lesson's BPE chart). Training
# draws its figures once a model is trained: its charts are checked as data, and step 9's figure here.
MORE_FIGURE_VIEWS = (("overview", "en"), ("overview", "zh"), ("head", "en"), ("decoding", "en"),
                     ("decoding?temperature=1.5", "zh"), ("embeddings", "en"), ("layers", "zh"), ("break_it", "en"),
                     ("?lesson_step=1", "zh"), ("?lesson_step=4", "en"), ("?lesson_step=8", "en"),
                     ("?lesson_step=9", "en"))
SCROLL_MAIN = "(share) => { const main = document.querySelector('[data-testid=stMain]'); " \
              "main.scrollTop = share * (main.scrollHeight - main.clientHeight); return main.scrollTop; }"

# The page's texts whose boxes meet the box of the element `selector` (itself and what it holds left out).
TEXTS_UNDER = """(selector) => {
  const cover = document.querySelector(selector);
  if (!cover) return null;
  const c = cover.getBoundingClientRect();
  if (c.width === 0 || c.height === 0) return [];
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    if (!text || cover.contains(node) || node.parentElement.closest('style, script')) continue;
    let unseen = false;  // inside a box clipped away for the eye, read by a screen reader only (a text alternative)
    for (let e = node.parentElement; e && !unseen; e = e.parentElement) {
      unseen = getComputedStyle(e).clipPath !== 'none';
    }
    if (unseen) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) continue;
      const x = Math.min(r.right, c.right) - Math.max(r.left, c.left);
      const y = Math.min(r.bottom, c.bottom) - Math.max(r.top, c.top);
      if (x > 1 && y > 1) { found.push(text.slice(0, 50)); break; }
    }
  }
  return found;
}"""
# The box of an element, in CSS px of the viewport (null: none, or not drawn).
BOX = """(selector) => {
  const el = document.querySelector(selector);
  if (!el) return null;
  const r = el.getBoundingClientRect();
  return r.width && r.height ? [r.left, r.top, r.right, r.bottom] : null;
}"""
# Each figure's plot area (its x axis, from Plotly's own layout) in CSS px: [left, right], and the tick texts
# Plotly drew on its x axes.
PLOT_AREAS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(plot => {
  const box = plot.getBoundingClientRect(), xaxis = plot._fullLayout.xaxis;
  return {left: box.left + xaxis._offset, right: box.left + xaxis._offset + xaxis._length,
          keys: Array.from(plot.querySelectorAll('g.xtick text')).map(t => t.textContent)};
})"""


HOVERED = "(i) => document.querySelectorAll('.js-plotly-plot')[i].matches(':hover')"
# The box of Plotly's toolbar of figure i (null: not drawn).
TOOLBAR = """(i) => {
  const bar = document.querySelectorAll('.js-plotly-plot')[i].querySelector('.modebar');
  const r = bar ? bar.getBoundingClientRect() : null;
  return r && r.width && r.height ? [r.left, r.top, r.right, r.bottom] : null;
}"""


def url_of(app_url: str, path: str, lang: str = "en") -> str:
    joined = "&" if "?" in path else "?"
    language = f"&lang={quote(LANGUAGES[lang])}" if LANGUAGES[lang] else ""
    return f"{app_url}{path}{joined}present=true{language}"


@pytest.fixture(scope="module")
def pages(browser):
    """A page of a browser context per size, opened once and reused by the tests (one context per size)."""
    opened = {}
    for name, size in SIZES.items():
        context = browser.new_context(viewport={"width": size.width, "height": size.height},
                                      device_scale_factor=size.scale)
        context.add_init_script(RUN_COUNTER)
        opened[name] = context.new_page()
    yield opened
    for page in opened.values():
        page.context.close()


def visit(page, url: str) -> None:
    open_app(page, url)
    wait_for_figures(page)
    assert exceptions(page) == []


def figures_of(page) -> list[Figure]:
    return [Figure.from_page(raw) for raw in page.evaluate(FIGURE_TEXTS)]


@pytest.mark.parametrize("path, lang", [*((path, lang) for path in FIGURE_PAGES for lang in LANGUAGES),
                                        *MORE_FIGURE_VIEWS])
def test_every_text_of_a_figure_is_at_least_16_px_on_the_projector_and_nothing_collides(app_url, pages, path, lang):
    """At 1280×720 every text of every figure is ≥ 16 px (they were 10–15 px); at 150 % zoom the same figures
    (larger still on the screen) still fit: no overlap, nothing cut off, nothing wider than the page."""
    rows = []
    for size, page in pages.items():
        visit(page, url_of(app_url, f"/{path}", lang))
        figures = figures_of(page)
        assert figures, "the page drew no figure"
        smallest = PROJECTOR_FONT_PX if size == "1280x720" else 9.5
        rows += [(size, problem) for figure in figures for problem in figure_problems(figure, min_font=smallest)]
        rows += [(size, problem) for problem in page_problems([], page.evaluate(PAGE_WIDTH))]
    assert not rows, f"{len(rows)} problems:\n{problem_table(rows)}"


@pytest.mark.parametrize("path", ["/?lesson_step=3", "/?lesson_step=5", "/attention", "/compare"])
def test_leave_presenter_mode_covers_no_text_wherever_the_page_is_scrolled(app_url, pages, path):
    covered = {}
    for size, page in pages.items():
        visit(page, url_of(app_url, path))
        for share in (0, 0.25, 0.5, 1):
            page.evaluate(SCROLL_MAIN, share)
            texts = page.evaluate(TEXTS_UNDER, ".st-key-present_exit button")
            assert texts is not None, "no way out of presenter mode"
            if texts:
                covered[size, share] = texts
    assert not covered, covered


@pytest.mark.parametrize("path", ["/attention", "/?lesson_step=3"])
def test_plotly_toolbar_covers_no_text_of_a_figure_under_the_mouse(app_url, pages, path):
    covered = {}
    for size, page in pages.items():
        visit(page, url_of(app_url, path))
        for index in range(page.locator(".js-plotly-plot").count()):
            plot = page.locator(".js-plotly-plot").nth(index)
            plot.scroll_into_view_if_needed()
            plot.hover()
            page.wait_for_function(HOVERED, arg=index)
            bar = page.evaluate(TOOLBAR, index)
            if bar is None:
                continue
            figure = figures_of(page)[index]
            under = [text.text for text in figure.texts if overlaps(bar, text.bounds)]
            if under:
                covered[size, figure.name] = under
    assert not covered, covered


def overlaps(a, b, tolerance: float = 1.0) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > tolerance and min(a[3], b[3]) - max(a[1], b[1]) > tolerance


@pytest.mark.parametrize("step", [2, 5, 8])
def test_the_lesson_controls_stay_on_screen_when_a_step_is_scrolled_to_its_end(app_url, pages, step):
    for size, page in pages.items():
        visit(page, url_of(app_url, f"/?lesson_step={step}"))
        page.evaluate(SCROLL_MAIN, 1)
        assert page.evaluate(SCROLL_MAIN, 1) > 0, "the step fits the screen: nothing to check"
        for key in ("lesson_previous", "lesson_next"):
            box = page.evaluate(BOX, f".st-key-{key} button")
            assert box is not None, (size, key)
            left, top, right, bottom = box
            assert top >= 0 and bottom <= SIZES[size].height, (size, key, box)
            middle = page.evaluate(f"""() => document.elementFromPoint({(left + right) / 2}, {(top + bottom) / 2})
                                       ?.closest('.st-key-{key}') !== null""")
            assert middle, f"{key} is covered at {size}"
    page = pages["1280x720"]
    rerun_after(page, page.locator(".st-key-lesson_next button").click)
    assert f"lesson_step={step + 1}" in page.url


def test_compare_names_the_keys_of_a_and_b_and_lines_the_three_grids_up(app_url, pages):
    for size, page in pages.items():
        visit(page, url_of(app_url, "/compare?b_weights=pretrained&b_breaks=no_scale"))
        grids = page.evaluate(PLOT_AREAS)
        assert len(grids) == 3, size  # A, B, B − A
        for name, grid in zip(("A", "B", "B − A"), grids, strict=True):
            assert {"h", "e", "l", "o", "<eos>"} <= set(grid["keys"]), (size, name, grid["keys"])
        lefts, rights = [grid["left"] for grid in grids], [grid["right"] for grid in grids]
        assert max(lefts) - min(lefts) <= 1 and max(rights) - min(rights) <= 1, (size, lefts, rights)


def test_the_source_padding_mask_names_its_eos_when_its_labels_are_thinned(app_url, pages):
    for size, page in pages.items():
        visit(page, url_of(app_url, "/masks?src_text=abcdefghi&pad=12"))
        source = page.evaluate(PLOT_AREAS)[0]["keys"]
        assert "<eos>" in source and len(source) < 12, (size, source)  # thinned, and <eos> kept


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("value", ["weights", "scores", "masked_scores"])
def test_the_draw_box_shows_its_whole_choice(app_url, pages, value, lang):
    for size, page in pages.items():
        visit(page, url_of(app_url, f"/attention?value={value}", lang))
        shown = page.evaluate("""() => { const input = document.querySelector('.st-key-value input[role=combobox]');
                                         return [input.value, input.scrollWidth, input.clientWidth]; }""")
        text, needed, width = shown
        assert needed <= width, f"{size}: “{text}” needs {needed} px of {width}"
