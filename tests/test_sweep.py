"""Every page and every lesson step on every kind of model, with its weights shipped, random or in another shape,
in both languages, with presenter mode on and off (AppTest): never an exception, never an error box.

The dimensions are read from the app itself: the navigation's pages, the lesson's STEPS and the Architectures
(`analysis.architecture.TOY`, `weights.architectures.HUGGING_FACE`), so a new page, step or kind of model is swept
without anyone adding it here. A run covers every screen × architecture × weights; the language and presenter mode
turn with them (each screen, architecture and weights is seen in both languages and both modes: every pair of
values of the five dimensions is covered). `TV_SWEEP=full` runs every combination of all five (about four times
as long).
"""

import itertools
import os

import pytest
from helpers import HF_FAMILIES
from test_app import assert_valid_figures, run_page

from transformer_viz.analysis.architecture import TOY
from transformer_viz.app.frame.navigation import PAGES
from transformer_viz.i18n import text
from transformer_viz.lessons import STEPS
from transformer_viz.weights.architectures import HUGGING_FACE

SCREENS = [*(("page", page) for page in PAGES if page != "lesson"),
           *(("lesson", number) for number in range(1, len(STEPS) + 1))]
# How a toy model's weights are opened: shipped, drawn at random, in a shape no checkpoint has (random too).
TOY_WEIGHTS = {"pretrained": {}, "random": {"weights": "random"},
               "shape": {"n_heads": "2", "d_model": "32", "n_decoder_layers": "1"}}
TOY_ONLY_PAGES = ("training", "break_it", "compare")  # they train, change or compare a toy model's weights
MODES = [{"lang": lang, "present": present} for present in ("false", "true") for lang in ("en", "zh")]
FULL = os.environ.get("TV_SWEEP") == "full"


def combinations(architectures, weights):
    """(screen, architecture, weights, mode): every screen × architecture × weights, the mode turning so that each
    is met in every mode across the screens (TV_SWEEP=full: every mode with each)."""
    cases = []
    for s, (screen, architecture, weight) in enumerate(itertools.product(SCREENS, architectures, weights)):
        modes = MODES if FULL else [MODES[(s + s // len(MODES)) % len(MODES)]]
        cases += [(screen, architecture, weight, mode) for mode in modes]
    return cases


def case_id(case) -> str:
    (kind, screen), architecture, weight, mode = case
    present = "present" if mode["present"] == "true" else "plain"
    return f"{kind}-{screen}-{architecture}-{weight}-{mode['lang']}-{present}"


def screen_link(screen, mode) -> dict[str, str]:
    kind, which = screen
    link = {"lang": mode["lang"], "present": mode["present"]}
    return {**link, "lesson_step": str(which)} if kind == "lesson" else link


def assert_clean(at, case, toy: bool = True) -> None:
    """No exception and no error box; valid figures; a page draws its figures (Training before any training
    has none, a page that trains or changes weights says that a Hugging Face model is not for it); a lesson step
    shows its formula and a question (its figures may wait for the answer: tests/test_lesson.py draws them)."""
    exceptions = [(e.proto.type, e.proto.message, *e.stack_trace[-3:]) for e in at.exception]
    assert not exceptions, (case_id(case), exceptions)
    assert not at.error, (case_id(case), [e.value for e in at.error])
    assert_valid_figures(at)
    (kind, which), mode = case[0], case[3]
    if kind == "lesson":
        assert at.get("latex"), (case_id(case), "no formula")
        predict = text("lesson.predict", mode["lang"])
        assert any(m.value.startswith(f"**{predict}:** ") and len(m.value) > len(predict) + 8 for m in at.markdown), \
            (case_id(case), "no question")
    elif which != "training" and (toy or which not in TOY_ONLY_PAGES):
        assert at.get("plotly_chart"), (case_id(case), "the page drew no figure")


TOY_CASES = combinations(tuple(TOY), tuple(TOY_WEIGHTS))


@pytest.mark.parametrize("case", TOY_CASES, ids=[case_id(case) for case in TOY_CASES])
def test_every_screen_on_every_toy_model(case):
    screen, architecture, weight, mode = case
    kind, which = screen
    page = "lesson" if kind == "lesson" else which
    link = {**screen_link(screen, mode), "architecture": architecture, **TOY_WEIGHTS[weight]}
    if architecture == "decoder_only" and "task" not in link:
        link["task"] = "reverse"  # a task both architectures learn, as the link names it
    assert_clean(run_page(page, link=link), case)


def test_every_architecture_is_swept():
    """A new kind of model must say how the sweep opens it: the toy ones by the link, the others here."""
    assert set(HF_FAMILIES) == {type(architecture).__name__ for architecture in HUGGING_FACE.values()}


HF_CASES = combinations(tuple(HF_FAMILIES), ("own",))


@pytest.mark.hf
@pytest.mark.parametrize("case", HF_CASES, ids=[case_id(case) for case in HF_CASES])
def test_every_screen_on_every_hugging_face_model(case, hf_folders):
    screen, architecture, _, mode = case
    kind, which = screen
    page = "lesson" if kind == "lesson" else which
    at = run_page(page, link=screen_link(screen, mode), source="hf",
                  hf_model=hf_folders[HF_FAMILIES[architecture]], src_text="the cat sat on the mat")
    assert_clean(at, case, toy=False)


# The links the issues found crashing: the home page on a GPT model, a step's input too long for its task.
REPORTED_LINKS = [{"architecture": "decoder_only", "task": "reverse"}, {"architecture": "decoder_only"},
                  {"lesson_step": "9", "src_text": "a" * 20}]


@pytest.mark.parametrize("link", REPORTED_LINKS, ids=lambda link: "&".join(f"{k}={v}" for k, v in link.items()))
def test_the_reported_links_open_the_home_page(link):
    at = run_page("lesson", link=link)
    assert not at.exception, [e.proto.type for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.get("latex")  # the step is there, not an error in its place
