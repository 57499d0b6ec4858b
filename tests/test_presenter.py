"""Presenter mode on a 1280×720 projector, in a real Chromium: no text of a figure collides or is cut off.

One `streamlit run` server and one browser visit every lesson step and every explorer page with
`present=true` at two sizes (and the pages with inputs at max length on /attention and /masks):

- "1280x720": a 1280×720 viewport at device scale 1, the projector itself;
- "150%": the same window at 150 % browser zoom. Browser zoom changes the CSS pixel size, so the
  page lays out in a 1280/1.5 × 720/1.5 = 853×480 CSS px viewport drawn at device scale 1.5. That
  is emulated exactly (same media queries, same layout, same `devicePixelRatio`) by such a viewport;
  CSS `zoom` on the document would not be: Streamlit and Plotly measure their containers and would
  lay out for 1280 px, then be scaled.
- "150% 中文": the same in Chinese (not the long inputs).

On each page, after the run is idle and every figure is drawn, the corners of each visible `text`
of each `.js-plotly-plot` (tick labels, titles, annotations, cell numbers, legends) are read and
checked (devtools/text_boxes.py): no two texts of a figure overlap by more than 1.5 px (rotated
labels as the rotated boxes they are; a text Plotly draws twice at one place counts once), none
sticks out of its figure's SVG, none is under 9.5 px, no figure (nor the page) is wider than the
viewport, no formula is cut off or shrunk under 12 px, no label is shortened to "…", no error is
shown, nothing scrolls sideways out of sight (a row of pills), and the lesson's Previous / Next
buttons stand at the same place on every step. Cell numbers
the app hides in a chart too narrow for them (CSS, display: none) are not drawn, so not checked.
A failure prints a table: page, figure (its place and title), kind of problem and the texts involved.

Not covered: the lesson's last step after its Train button (a minute of training) and the Training
page's figures after a run; they were checked once by hand with the same functions.

Set TV_SCREENSHOTS=/some/folder to also save a full-page screenshot of every page visited.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest

from devtools.browser import (
    CONNECTED,
    IS_IDLE,
    RUN_COUNTER,
    chromium,
    exceptions,
    full_page_screenshot,
    streamlit_server,
    wait_for_figures,
    wait_for_idle,
)
from devtools.text_boxes import FIGURE_TEXTS, PAGE_WIDTH, Problem, page_problems, problem_table
from transformer_viz.lessons import STEPS

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # browser: skipped, saying why, without Chromium


@dataclass(frozen=True)
class Size:
    width: int
    height: int
    scale: float
    lang: str = ""  # the app's language; "": its default, English
    long_inputs: bool = True  # also the pages with inputs at max length


# The figures' words in Chinese are shorter in characters but twice as wide per character: checked at the
# tighter size only (the long inputs are tokens, not words).
SIZES = {"1280x720": Size(1280, 720, 1.0), "150%": Size(853, 480, 1.5),
         "150% 中文": Size(853, 480, 1.5, lang="zh", long_inputs=False)}
LESSON = tuple(f"/?lesson_step={n}&present=true" for n in range(1, len(STEPS) + 1))
EXPLORER = tuple(f"/{page}?present=true" for page in ("overview", "embeddings", "attention", "masks", "head", "layers",
                                                      "decoding", "training", "break_it", "compare"))
# The longest inputs a class server builds (max_len 64) on a fresh model: 52 letters to copy, and a
# sentence of 40 English words (the en-zh grammar's own words) whose Chinese has as many tokens.
LETTERS = "abcdefghijklmnopqrstuvwxyz" * 2
SENTENCE = ("my mother drinks a cup of tea at home every day the teacher will not read two books in the library "
            "tomorrow he ate an apple at school yesterday she bought three pens")
LONG_VIEWS = {task: "&".join(f"{key}={quote(value)}" for key, value in (
    ("task", task), ("max_len", "64"), ("weights", "random"),
    ("src_text", text)))
    for task, text in (("copy", LETTERS), ("en-zh", SENTENCE))}
LONG = tuple(f"/{page}?{view}&present=true" for page in ("attention", "masks") for view in LONG_VIEWS.values())
ERROR = "[data-testid=stMain] [data-testid=stAlertContentError]"  # st.error in the page: e.g. an input refused
NAVIGATION = """() => Object.fromEntries(['lesson_previous', 'lesson_next'].map(key => {
  const box = document.querySelector(`.st-key-${key} button`);
  if (!box) return [key, null];
  const r = box.getBoundingClientRect();
  return [key, [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)]];
}))"""


@dataclass
class Visit:
    problems: list[Problem] = field(default_factory=list)
    navigation: dict | None = None
    figures: int = 0
    texts: int = 0
    seconds: float = 0.0


def visit(page, url: str, shots: Path | None, name: str) -> Visit:
    """Open one page, wait for it and its figures, and check where the texts of its figures are."""
    start, result = time.monotonic(), Visit()
    try:
        page.goto(url)
        page.wait_for_selector(CONNECTED, state="attached", timeout=90_000)
        page.wait_for_function(f"() => window.__tvRuns > 0 && ({IS_IDLE})()", timeout=90_000)
        wait_for_idle(page)
        wait_for_figures(page)
    except Exception as error:  # reported as the page's problem
        result.problems.append(Problem("(page)", "did not finish", str(error).splitlines()[0]))
        return result
    figures = page.evaluate(FIGURE_TEXTS)
    result.problems += page_problems(figures, page.evaluate(PAGE_WIDTH))
    result.problems += [Problem("(page)", "exception", text.splitlines()[0]) for text in exceptions(page)]
    result.problems += [Problem("(page)", "error", text.strip().splitlines()[-1])
                        for text in page.locator(ERROR).all_inner_texts()]
    result.navigation = page.evaluate(NAVIGATION)
    result.figures, result.texts = len(figures), sum(len(f["texts"]) for f in figures)
    if shots is not None:
        full_page_screenshot(page, str(shots / f"{name}.png"))
    result.seconds = time.monotonic() - start
    return result


def short(path: str) -> str:
    """A page's address without the parts every address here shares: "/?lesson_step=3", "/masks (en-zh, long)"."""
    for task, view in LONG_VIEWS.items():
        if view in path:
            return f"{path.split('?')[0]} ({task}, max length)"
    return path.replace("&present=true", "").replace("?present=true", "")


@pytest.fixture(scope="module")
def survey() -> dict[tuple[str, str], Visit]:
    """Every page at every size, visited once with one server and one browser: {(size, path): Visit}."""
    folder = os.environ.get("TV_SCREENSHOTS")
    shots = Path(folder) if folder else None
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    visits = {}
    with streamlit_server() as url, chromium() as browser:
        for size_name, size in SIZES.items():
            context = browser.new_context(viewport={"width": size.width, "height": size.height},
                                          device_scale_factor=size.scale)
            context.add_init_script(RUN_COUNTER)
            page = context.new_page()
            language = f"&lang={quote(size.lang)}" if size.lang else ""
            for number, path in enumerate((*LESSON, *EXPLORER, *(LONG if size.long_inputs else ()))):
                name = f"{size_name.replace('%', 'pct')}_{number:02d}_{short(path).strip('/?')}"
                visits[size_name, path] = visit(page, url + path + language, shots, re.sub(r"[^\w-]+", "_", name))
            context.close()
    print("\npage                               size       figures  texts  problems  seconds")
    for (size_name, path), found in visits.items():
        print(f"{short(path):33}  {size_name:9}  {found.figures:7}  {found.texts:5}  {len(found.problems):8}"
              f"  {found.seconds:7.1f}")
    return visits


def check(survey, paths) -> None:
    rows = [(f"{short(path)} @ {size}", problem) for (size, path), found in survey.items() if path in paths
            for problem in found.problems]
    assert not rows, f"{len(rows)} problems:\n{problem_table(rows)}"


@pytest.mark.parametrize("path", LESSON)
def test_lesson_step_figures_fit_a_projector(survey, path):
    check(survey, {path})


@pytest.mark.parametrize("path", EXPLORER)
def test_explorer_page_figures_fit_a_projector(survey, path):
    check(survey, {path})


@pytest.mark.parametrize("view", LONG_VIEWS)
def test_inputs_at_max_length_keep_readable_labels(survey, view):
    check(survey, {path for path in LONG if LONG_VIEWS[view] in path})
    # The input was read, not refused: the pages drew hundreds of labels for it.
    assert all(found.texts > 100 for (_, path), found in survey.items() if LONG_VIEWS[view] in path)


@pytest.mark.parametrize("size", SIZES)
def test_previous_and_next_stay_at_the_same_place_on_every_step(survey, size):
    places = {path: survey[size, path].navigation for path in LESSON}
    assert all(place and None not in place.values() for place in places.values()), places
    assert len({str(place) for place in places.values()}) == 1, places
