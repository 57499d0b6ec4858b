"""The code shown beside each step of one head is the model's own code, and its marked lines are the ones that run."""

import inspect
import sys
from pathlib import Path

import pytest
import torch

from tests.test_app import run_page
from transformer_viz import ModelConfig, Transformer
from transformer_viz.analysis.source import HEAD_STEP_CODE, code_excerpt, head_step_code
from transformer_viz.model.attention import scaled_dot_product_attention

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("step, operation", [
    ("x", "norm(x)"), ("projections", "q_proj"), ("qk", "q @ k.transpose"), ("scale", "math.sqrt"),
    ("mask", "masked_fill"), ("softmax", ".softmax("), ("weighted_sum", "@ v"), ("concat", "transpose(1, 2)"),
    ("output", "out_proj"), ("rotate", "rot"),
])
def test_each_step_marks_the_lines_of_the_file_that_compute_it(step, operation):
    excerpt = head_step_code(step)
    file_lines = (ROOT / excerpt.path).read_text().splitlines()
    for number in excerpt.marked_line_numbers:
        assert operation in file_lines[number - 1] or step == "projections"  # the real line, at its number
    assert all(file_lines[excerpt.first_line - 1 + i] == line for i, line in enumerate(excerpt.lines))
    assert any(operation in excerpt.lines[i] for i in excerpt.marked)


def executed_lines(config: ModelConfig) -> set[tuple[str, int]]:
    """(file, line) of every line of the package run by one forward pass."""
    model = Transformer(config, generator=torch.Generator().manual_seed(0)).eval()
    seen = set()

    def tracer(frame, event, _arg):
        if event == "line" and "transformer_viz" in frame.f_code.co_filename:
            seen.add((Path(frame.f_code.co_filename).resolve().as_posix(), frame.f_lineno))
        return tracer

    ids = torch.tensor([[1, 2, 3, 4]])
    sys.settrace(tracer)
    try:
        model(ids, ids)
    finally:
        sys.settrace(None)
    return seen


@pytest.mark.parametrize("norm_first", [True, False])
def test_the_marked_lines_are_the_ones_a_forward_pass_runs(norm_first):
    config = ModelConfig(src_vocab_size=8, tgt_vocab_size=8, d_model=8, n_heads=2, n_encoder_layers=1,
                         n_decoder_layers=1, d_ff=16, max_len=8, norm_first=norm_first, positional="rotary")
    ran = executed_lines(config)  # rotary positions: the "rotate" step's lines run too
    for step in HEAD_STEP_CODE:
        excerpt = head_step_code(step, norm_first)
        path = (ROOT / excerpt.path).resolve().as_posix()
        assert {(path, n) for n in excerpt.marked_line_numbers} <= ran, step


def test_a_line_that_is_not_in_the_function_is_refused_rather_than_guessed():
    function, _ = HEAD_STEP_CODE["scale"]
    with pytest.raises(LookupError, match="0 lines begin with"):
        code_excerpt(function, ("scores = scores * 2",))
    with pytest.raises(ValueError, match="no step 'ffn'"):
        head_step_code("ffn")


def test_inside_one_head_shows_the_code_of_each_step():
    at = run_page("head")
    assert not at.exception
    labels = [e.label for e in at.expander]
    code = [label for label in labels if label.startswith("The code that computed this")]
    # Every step but "rotate" (a model with rotary positions only) shows its code.
    assert len(code) == len(HEAD_STEP_CODE) - 1 and "The code that computed this: “attention.py”" in code
    listings = "".join(h.proto.body for h in at.get("html"))
    source = Path(inspect.getsourcefile(scaled_dot_product_attention)).read_text().splitlines()
    scaling = next(i for i, line in enumerate(source, 1) if line.strip().startswith("scores = scores / math.sqrt"))
    assert f"# transformer_viz/model/attention.py, line {scaling}" in listings  # the scaling, at its line


def test_every_lesson_step_shows_the_model_code_it_is_about():
    from transformer_viz.lessons import STEPS

    for step in STEPS:
        assert step.code, step.name
        for function, beginnings in step.code:
            excerpt = code_excerpt(function, beginnings)  # LookupError when the code changed under the step
            assert len(excerpt.marked) == len(beginnings), step.name
    at = run_page("lesson", link={"lesson_step": "5"})
    assert not at.exception
    label = next(e.label for e in at.expander if e.label.startswith("The code that computed this"))
    assert label == "The code that computed this: “masks.py”, “attention.py”"
