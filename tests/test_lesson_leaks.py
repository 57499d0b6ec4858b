"""Nothing shown before the reveal gives a step's answer away, on every step and every kind of model (AppTest).

Every step's question is data (lessons/question.py): its truth, computed from the live model, and its `tells`, the
numbers, arrays and strings the answer rests on. Before the reveal the test reads everything the page shows (its
sentences, tables, metrics, and every figure's text and numbers) and looks for each tell; and no figure may mark
one element in the highlight colour, which the figures keep for the answer. A step that asks a question must
declare what would tell its answer. The steps and models are read from the app: a new one is checked by itself.
"""

import base64
import json
import re

import numpy as np
import pytest
from helpers import HF_FAMILIES
from test_app import run_page

from transformer_viz.analysis.architecture import TOY
from transformer_viz.app.session.charts import ALTERNATIVE
from transformer_viz.figures.colours import HIGHLIGHT
from transformer_viz.lessons import STEPS
from transformer_viz.lessons.question import NUMBER

CASES = [(number, architecture) for number in range(1, len(STEPS) + 1) for architecture in TOY]
COMMON = {"0.00", "1.00", "-0.00", "0%", "100%", "0.0%", "100.0%"}  # too common to tell anything


def link_of(number: int, architecture: str) -> dict[str, str]:
    """The step as its setup opens it, on this kind of model."""
    setup = {field: str(value) for field, value in STEPS[number - 1].setup.items()}
    return {"lesson_step": str(number), **setup, "architecture": architecture}


def numbers_in(value) -> list[np.ndarray]:
    """Every array of numbers in a figure's JSON (Plotly's typed arrays decoded), 2-D ones kept 2-D."""
    found = []
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).astype(float)
        shape = [int(n) for n in str(value.get("shape", len(data))).split(",")]
        return [data.reshape(shape)]
    if isinstance(value, dict):
        for item in value.values():
            found += numbers_in(item)
    elif isinstance(value, list):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return [np.array(value, float)]
        if value and all(isinstance(v, list) for v in value):
            try:
                return [np.array(value, float)]
            except (TypeError, ValueError):
                pass
        for item in value:
            found += numbers_in(item)
    return found


def shows_array(arrays: list[np.ndarray], tell: np.ndarray) -> bool:
    """Whether a figure's numbers hold the tell: the same matrix, or (a 1-D tell) any row or column."""
    tell = np.asarray(tell, float)
    for array in arrays:
        candidates = [array] if array.ndim == tell.ndim else []
        if tell.ndim == 1 and array.ndim == 2:
            candidates = [*array, *array.T]
        if any(c.shape == tell.shape and np.allclose(c, tell, atol=1e-4, equal_nan=False) for c in candidates):
            return True
    return False


def written_forms(value: float) -> set[str]:
    """How a page writes a number that tells the answer (two or three decimals, a percentage)."""
    forms = {f"{value:.2f}", f"{value:.3f}", f"{value:.0%}", f"{value:.1%}"}
    return {form for form in forms if form not in COMMON and re.search(r"[1-9]", form) and ("." in form or "%" in form)}


def single_highlights(figure: dict) -> list[str]:
    """Where a figure singles one element out in the highlight colour: an outline, or one entry of a colour list."""
    marks = [f"shape {s.get('type')}" for s in figure["layout"].get("shapes", [])
             if s.get("line", {}).get("color") == HIGHLIGHT]
    for trace in figure["data"]:
        for part in ("marker", "textfont", "line"):
            colours = trace.get(part, {}).get("color")
            if isinstance(colours, list) and colours.count(HIGHLIGHT) == 1 and len(colours) > 1:
                marks.append(f"{trace.get('type')} {part}")
    return marks


def asked(at, number: int):
    questions = [q for q in at.session_state["_asked"].values() if q.step == number] if "_asked" in at.session_state \
        else []
    return questions[-1] if questions else None


@pytest.mark.parametrize(("number", "architecture"), CASES, ids=[f"step{n}-{a}" for n, a in CASES])
def test_nothing_before_the_reveal_tells_the_answer(number, architecture):
    assert_no_leak(run_page("lesson", link=link_of(number, architecture)), number)


HF_CASES = [(number, family) for number in range(1, len(STEPS) + 1) for family in HF_FAMILIES.values()]


@pytest.mark.hf
@pytest.mark.parametrize(("number", "family"), HF_CASES, ids=[f"step{n}-{f}" for n, f in HF_CASES])
def test_nothing_before_the_reveal_tells_the_answer_on_a_hugging_face_model(number, family, hf_folders):
    link = {"lesson_step": str(number), **{f: str(v) for f, v in STEPS[number - 1].setup.items()}}
    assert_no_leak(run_page("lesson", link=link, source="hf", hf_model=hf_folders[family],
                            src_text="the cat sat on the mat"), number)


def assert_no_leak(at, number: int) -> None:
    assert not at.exception, [e.value for e in at.exception]
    question = asked(at, number)
    if question is None:  # not asked on this model (a step about cross-attention on a GPT): nothing to leak
        return
    tells = list(question.tells) + ([question.truth] if question.kind == NUMBER else [])
    assert question.tells, f"step {number} asks a question but declares nothing that would tell its answer"
    texts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [m.value for m in at.metric]
    # A figure's text alternative holds the figure's own numbers, which the figures' checks below look at (as
    # numbers: a weight written 0.080 is not a probability of 0.0798 told).
    texts += [t.value.to_string() for t in at.table] + [h.proto.body for h in at.get("html")
                                                         if f'class="{ALTERNATIVE}"' not in h.proto.body]
    figures = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    shown = "\n".join(texts + [json.dumps(f, ensure_ascii=False) for f in figures])
    arrays = [array for figure in figures for array in numbers_in(figure["data"])]
    for tell in tells:
        if isinstance(tell, str):
            assert tell not in shown, f"step {number}: {tell!r} shows before the reveal"
        elif np.ndim(tell) == 0 and float(tell).is_integer():  # a count: axes and labels are full of whole numbers
            continue
        elif np.ndim(tell) == 0:
            for form in written_forms(float(tell)):  # as a number of its own (0.90, not the start of 0.909)
                written = re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", "\n".join(texts))
                assert not written, f"step {number}: {form} is written before the reveal"
            scalar = np.array([float(tell)])
            for array in arrays:
                if array.ndim == 1 and array.size <= 50:  # a curve or bars: a value a reader reads off
                    assert not np.isclose(array, scalar, rtol=1e-6).any(), f"step {number}: {tell} is drawn"
        else:
            assert not shows_array(arrays, tell), f"step {number}: the answer's numbers are drawn before the reveal"
    for figure in figures:
        assert not single_highlights(figure), f"step {number}: a figure marks the answer before the reveal"
