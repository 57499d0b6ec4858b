"""The lesson in a real Chromium, start to end in both languages: Next, the step in the link, the answer
revealed on click (and what answers a question shown only then), a fresh model trained on the last step, and
"open this in the explorer"."""

import contextlib
import os
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from devtools.browser import (
    exceptions,
    new_page,
    open_app,
    rerun_after,
    wait_for_idle,
)
from transformer_viz.figures.colours import HIGHLIGHT
from transformer_viz.lessons import STEPS

pytestmark = pytest.mark.browser  # skipped, saying why, where Chromium is missing (conftest.py)

TEXT = {
    "en": {"next": "Next", "reveal": "Reveal the answer", "heading": "{n} of " + str(len(STEPS)),
           "open": "Open this in the explorer", "train": "Train a fresh model", "not_yet": "not trained yet"},
    "zh": {"next": "下一步", "reveal": "揭晓答案", "heading": "第 {n} 步",
           "open": "在探索页中打开", "train": "训练一个新模型", "not_yet": "尚未训练"},
}



def revealed_answer(page, text, n: int) -> str:
    """Open step n's answer (the page reruns to draw it) and return its text."""
    details = page.locator(f".st-key-lesson_reveal_{n} [data-testid=stExpanderDetails]")
    rerun_after(page, lambda: page.get_by_text(text["reveal"], exact=True).click(),
                until=f"document.querySelector('.st-key-lesson_reveal_{n} [data-testid=stExpanderDetails] p')")
    return details.inner_text()


# What a person sees of the page's main area: its text (but the answer's choices), its figures' data and layout (as
# JSON), and how many metrics, tables and orange outlines (a highlighted head) it shows.
SHOWN = """(highlight) => {
  const main = document.querySelector('[data-testid=stMain]');
  const plots = Array.from(main.querySelectorAll('.js-plotly-plot'));
  const withoutChoices = main.cloneNode(true);  // the answer's choices name the candidates (step 8: four words)
  withoutChoices.querySelectorAll('[data-testid=stButtonGroup]').forEach(group => group.remove());
  return {text: withoutChoices.textContent, figures: plots.map(p => JSON.stringify([p.data, p.layout])).join('\\n'),
          metrics: main.querySelectorAll('[data-testid=stMetric]').length,
          tables: main.querySelectorAll('[data-testid=stTable]').length,
          outlines: plots.flatMap(p => p.layout.shapes || []).filter(s => s.line && s.line.color === highlight).length};
}"""


# The same parts, all on screen, as one JavaScript condition: waited for after Reveal, since a page under load
# draws a rerun's elements over several frames.
ALL_PARTS = {3: f"({SHOWN})(highlight).metrics === 2",
             6: f"(s => s.tables === 1 && s.outlines === 1)(({SHOWN})(highlight))",
             8: f"(s => s.text.includes('noir') && s.figures.includes('noir'))(({SHOWN})(highlight))"}


def answer_parts(page, n: int) -> dict[str, bool]:
    """Which parts of step n's answer are on screen: step 3's two measured differences, step 6's outlined head
    and its table, step 8's next word ("noir") in the text (the output's chips) and in the figures (the
    probabilities, the step that writes it)."""
    seen = page.evaluate(SHOWN, HIGHLIGHT)
    return {3: {"metrics": seen["metrics"] == 2},
            6: {"table": seen["tables"] == 1, "outline": seen["outlines"] == 1},
            8: {"word in text": "noir" in seen["text"], "word in figures": "noir" in seen["figures"]}}[n]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_steps_3_6_and_8_show_what_answers_their_question_only_after_reveal(app_url, browser, lang):
    text, shots = TEXT[lang], os.environ.get("TV_SCREENSHOTS")
    page = new_page(browser)
    for n in (3, 6, 8):
        open_app(page, f"{app_url}/?present=true&lesson_step={n}&lang={lang}")
        if shots:
            page.screenshot(path=str(Path(shots) / f"reveal_{lang}_{n}_before.png"))
        before = answer_parts(page, n)
        assert not any(before.values()), (n, "before Reveal", before)
        revealed_answer(page, text, n)
        with contextlib.suppress(PlaywrightTimeout):  # all drawn, or the assertion below says what is missing
            page.wait_for_function(f"(highlight) => {ALL_PARTS[n]}", arg=HIGHLIGHT, timeout=60_000)
        if shots:
            page.screenshot(path=str(Path(shots) / f"reveal_{lang}_{n}_after.png"))
        after = answer_parts(page, n)
        assert all(after.values()), (n, "after Reveal", after)
        assert exceptions(page) == [], (n, exceptions(page))
    page.context.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_lesson_runs_from_the_first_step_to_the_last(app_url, browser, lang):
    text = TEXT[lang]
    page = new_page(browser)
    open_app(page, f"{app_url}/?lang={lang}")
    shots = os.environ.get("TV_SCREENSHOTS")
    answers = []
    for n in range(1, len(STEPS) + 1):
        if n > 1:
            rerun_after(page, lambda: page.get_by_role("button", name=text["next"]).click(),
                        until=f"location.search.includes('lesson_step={n}')")
        assert page.locator("h3").filter(has_text=text["heading"].format(n=n)).count() == 1, n
        assert page.locator(".katex").count() >= 1, f"step {n}: no formula"
        answers.append(revealed_answer(page, text, n))
        assert answers[-1].strip(), f"step {n}: an empty answer"
        assert exceptions(page) == [], (n, exceptions(page))
        if shots:
            page.screenshot(path=str(Path(shots) / f"lesson_{lang}_{n}.png"))
    assert text["not_yet"] in answers[[step.name for step in STEPS].index("training")]
    page.context.close()


# The titles of the page's figures.
TITLES = "() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => p.layout.title.text).join(' | ')"


@pytest.mark.slow
def test_the_last_step_trains_a_fresh_model_while_its_question_and_figures_stay(app_url, browser):
    """While it trains (minutes on a busy server), the step keeps its question, the start of training and the
    live loss curve on screen; then the anti-diagonal appears, and the answer compares it with the shipped model."""
    page = new_page(browser)
    open_app(page, f"{app_url}/?lesson_step=8")
    rerun_after(page, lambda: page.get_by_role("button", name="Next").click(),
                until="location.search.includes('lesson_step=9')")
    page.get_by_role("button", name=TEXT["en"]["train"]).click()
    page.wait_for_function(f"() => ({TITLES})().includes('loss falls')", timeout=900_000)  # after any wait in line
    assert "Predict first: Trained 1500 steps, what share (%) of its last layer" in page.locator(
        "[data-testid=stMain]").inner_text()
    assert "Before training: cross-attention" in page.evaluate(TITLES)
    page.wait_for_selector("[data-testid=stProgress]", state="detached", timeout=900_000)
    wait_for_idle(page, timeout=300_000)
    answer = revealed_answer(page, TEXT["en"], 9)
    after = answer.split("After 400 steps: ")[1].split("%")[0]
    assert int(after) >= 80, answer  # a fresh model learns the mirror in 400 steps
    before = answer.split("(random weights): ")[1].split("%")[0]
    assert int(before) < 40, answer
    shipped = answer.split("trained 1500 steps: ")[1].split("%")[0]
    assert (int(after) < int(shipped)) == ("A short training gets less than the shipped model" in answer), answer
    assert exceptions(page) == []
    page.context.close()


def test_open_in_the_explorer_shows_the_same_view_on_its_page(app_url, browser):
    page = new_page(browser)
    open_app(page, f"{app_url}/?lesson_step=7")
    rerun_after(page, lambda: page.get_by_role("button", name=TEXT["en"]["open"]).click(),
                until="location.pathname.endsWith('/attention')")
    page.wait_for_selector(".js-plotly-plot")
    query = page.evaluate("() => location.search")
    assert "task=en-fr" in query and "src_text=the+black+cat" in query and "head=2" in query, query
    assert page.locator("h1").first.inner_text().startswith("Attention")
    assert exceptions(page) == []
    page.context.close()
