"""The lesson page in AppTest: every step in both languages, each set up for its point, each answer
checked against the model's real output computed here independently."""

import numpy as np
import pytest
from test_app import run_page

from transformer_viz.analysis.inference import next_token_probabilities, run_text
from transformer_viz.app.pages.lesson import STEPS, setup_values
from transformer_viz.data.tasks import TASKS
from transformer_viz.trace.names import attention_name
from transformer_viz.weights.pretrained import load_pretrained

FRENCH = "the black cat sees the small dog"


def answer(at) -> str:
    (revealed,) = [m.value for e in at.expander for m in e.markdown]
    return revealed


def open_step(number: int, lang: str = "en"):
    at = run_page("lesson", link={"lesson_step": str(number), "lang": lang})
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("number", range(1, len(STEPS) + 1))
def test_every_step_renders_with_a_formula_a_question_and_figures(number, lang):
    at = open_step(number, lang)
    assert at.session_state["lesson_step"] == number
    assert at.get("latex"), "no formula"
    assert answer(at)
    if STEPS[number - 1].name != "training":  # training draws its curves once trained
        assert at.get("plotly_chart"), "no figure"
    if lang == "zh":
        assert any(f"第 {number} 步" in m.value for m in at.markdown)


def test_a_step_sets_its_view_up_and_next_moves_on():
    at = open_step(5)
    assert (at.session_state["kind"], at.session_state["pad"], at.session_state["tgt_text"]) == (
        "decoder_self", 8, "olleh")
    at.button(key="lesson_next").click().run()
    assert at.session_state["lesson_step"] == 6
    assert (at.session_state["task"], at.session_state["kind"], at.session_state["tgt_text"]) == (
        "en-fr", "decoder_self", "")
    assert at.query_params["lesson_step"] == "6"
    at.button(key="lesson_previous").click().run()
    assert at.session_state["lesson_step"] == 5 and at.session_state["pad"] == 8


def test_a_link_that_chose_its_own_view_is_not_overwritten():
    at = run_page("lesson", link={"lesson_step": "2", "src_text": "sheep"})
    assert not at.exception
    assert at.session_state["src_text"] == "sheep" and at.query_params["src_text"] == "sheep"
    assert "0, the very same row" in answer(at)  # the two e's at positions 2 and 3
    at = run_page("lesson", link={"lesson_step": "2", "src_text": "abcd"})
    assert "Set this step up again" in answer(at)  # no equal pair at 2 and 3: the answer says so


def test_tokens_answer_is_the_first_merge_of_the_seed_corpus():
    assert answer(open_step(1)).startswith("` h ` + ` i ` (12 times)")


def test_embeddings_answer():
    trace = run_text(load_pretrained("reverse").model, TASKS["reverse"], "hello").trace
    token = trace["src_embed.token"][0]
    assert float((token[2] - token[3]).abs().max()) == 0.0
    assert answer(open_step(2)).startswith("Token embeddings: largest difference 0,")


def test_masks_answer():
    trace = run_text(load_pretrained("reverse").model, TASKS["reverse"], "hello", "olleh", pad_to=8).trace
    mask = trace[attention_name("decoder_self", 0, "mask")][0, 0].numpy()
    pads = [i for i, t in enumerate(trace.tgt_tokens) if t == "<pad>"]
    blocked_by_padding = sum(1 for q in range(8) for k in pads if k <= q and not mask[q, k])
    assert answer(open_step(5)).startswith(f"{blocked_by_padding} cells")


def test_heads_answer_names_the_previous_word_head():
    trace = run_text(load_pretrained("en-fr").model, TASKS["en-fr"], FRENCH).trace
    weights = trace[attention_name("decoder_self", 1, "weights")][0].numpy()
    previous = [np.mean([w[i, i - 1] for i in range(1, len(w))]) for w in weights]
    assert answer(open_step(6)).startswith(f"Head {int(np.argmax(previous)) + 1}:")


def test_cross_answer_is_the_word_the_noir_row_looks_at():
    run = run_text(load_pretrained("en-fr").model, TASKS["en-fr"], FRENCH)
    row = run.output_tokens.index("noir")  # row i reads target position i and writes the token after it
    weights = run.trace[attention_name("cross", 1, "weights")][0, 1, row].numpy()
    word = run.trace.src_tokens[int(np.argmax(weights))]
    assert word == "black"
    assert answer(open_step(7)).startswith(f"“{word}” (row {row}, labelled “chat”)")


def test_decoding_answer_is_the_models_next_word():
    run = run_text(load_pretrained("en-fr").model, TASKS["en-fr"], FRENCH)
    probabilities = next_token_probabilities(run.step(2))
    chosen = TASKS["en-fr"].tgt_vocab.tokens[int(np.argmax(probabilities))]
    assert chosen == run.output_tokens[2] == "noir"
    assert answer(open_step(8)).startswith(f"“{chosen}” with probability")


def test_training_answer_before_training_says_so():
    revealed = answer(open_step(9))
    assert "not trained yet" in revealed and "The shipped model: 9" in revealed


def test_the_training_page_opens_after_a_lesson_step():
    """Bug (found by the tour): a lesson step set every view field to its default, the learning rate and batch
    too, whose default None means "the task's own"; the Training page then raised a TypeError."""
    values = setup_values(STEPS[1])
    assert "train_lr" not in values and "train_batch" not in values
    at = run_page("training", **values)  # the session state a lesson step leaves
    assert not at.exception
