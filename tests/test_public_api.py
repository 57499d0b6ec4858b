"""The public API on every shipped model: `load_pretrained(name)` gives an object whose `translate`, `run_text` and
`generate` take the same arguments whatever the model's architecture (a decoder-only model: the prompt in, the
answer out), and say the same thing as the model's own task."""

import pytest

from transformer_viz import available_pretrained, load_pretrained
from transformer_viz.model.sampling import Sampling

SHIPPED = available_pretrained()


def test_ten_models_ship():
    assert len(SHIPPED) == 10, SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_translate_run_text_and_generate_answer_alike_on_every_shipped_model(name):
    loaded = load_pretrained(name)
    task, text = loaded.task, loaded.task.examples[0]
    output, trace = loaded.translate(text)
    assert output == loaded.generate(text) == loaded.run_text(text).output_text
    if task.lm_form == "answer" and name not in ("en-fr", "en-zh"):  # the algorithmic tasks are learnt exactly
        assert output == task.target(text), (name, output)
    # The trace is one teacher-forced pass over the answer: its last answer row wrote the answer's end
    forced = loaded.run_text(text, output)
    assert forced.teacher_forced and trace.tgt_tokens == forced.trace.tgt_tokens
    assert output.replace(" ", "") in "".join(trace.tgt_tokens).replace(" ", "") or not output
    drawn = loaded.generate(text, sampling=Sampling(temperature=1.0, seed=3))
    assert drawn == loaded.generate(text, sampling=Sampling(temperature=1.0, seed=3))  # its own generator


@pytest.mark.parametrize("name", ["reverse", "reverse-gpt"])
def test_reverse_answers_stressed_with_desserts_in_either_architecture(name):
    """The issue's call: `load_pretrained("reverse-gpt").translate("stressed")` raised a TypeError."""
    output, trace = load_pretrained(name).translate("stressed")
    assert output == "desserts"
    assert trace["logits"].shape[1] == len(trace.tgt_tokens)
