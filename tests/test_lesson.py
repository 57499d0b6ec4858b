"""The lesson page in AppTest: every step in both languages, each set up for its point, each answer
checked against the model's real output computed here independently, and nothing that answers a step's
question on the page before Reveal."""

import json
import uuid

import numpy as np
import pytest
import torch
from test_app import assert_valid_figures, run_page
from test_chinese_everywhere import assert_chinese

import transformer_viz.app.session.words
from transformer_viz import Transformer
from transformer_viz.analysis.inference import next_token_probabilities, run_text
from transformer_viz.app.pages.lesson import STEPS, setup_values
from transformer_viz.app.server.state import TrainedModel
from transformer_viz.app.session.charts import ALTERNATIVE
from transformer_viz.data.tasks import TASKS, model_config_for
from transformer_viz.figures.colours import HIGHLIGHT
from transformer_viz.trace.names import attention_name
from transformer_viz.weights.pretrained import load_pretrained

FRENCH = "the black cat sees the small dog"
MEASURED_BUSY_SECONDS = 199  # the slowest 400-step training of the lesson measured on a busy 2-core machine


SPOKEN = {"lang": "en"}  # the language of the page a test opened last


@pytest.fixture(autouse=True)
def labels_in_the_pages_language(monkeypatch):
    """AppTest formats the widgets' values again in the test's thread, where st.session_state is not the app's:
    a rerun of a Chinese page would look its choices up in English (test_chinese_everywhere does the same)."""
    monkeypatch.setattr(transformer_viz.app.session.words, "lang", lambda: SPOKEN["lang"])


def open_step(number: int, lang: str = "en", **link):
    SPOKEN["lang"] = lang
    at = run_page("lesson", link={"lesson_step": str(number), "lang": lang, **link})
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def reveal(at, number: int):
    """Open the step's Reveal expander, as a click does (it reruns the page)."""
    at.session_state[f"lesson_reveal_{number}"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def answer(at) -> str:
    (revealed,) = [m.value for e in at.expander for m in e.markdown]
    return revealed


def revealed_answer(number: int, lang: str = "en", **link) -> str:
    return answer(reveal(open_step(number, lang, **link), number))


def page_text(at) -> str:
    """Everything the page shows: its sentences, metrics, tables, token chips and figures (as JSON)."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [h.proto.body for h in at.get("html")]
    parts += [f"{m.label} {m.value}" for m in at.metric] + [t.value.to_string() for t in at.table]
    return "\n".join(parts + [chart.proto.spec for chart in at.get("plotly_chart")])


def charts(at) -> dict[str, dict]:
    """The page's figures by their chart's key."""
    return {chart.proto.id.rsplit("-", 1)[-1]: json.loads(chart.proto.spec) for chart in at.get("plotly_chart")}


def outlined(figure: dict) -> list[dict]:
    return [s for s in figure["layout"].get("shapes", []) if s.get("line", {}).get("color") == HIGHLIGHT]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("number", range(1, len(STEPS) + 1))
def test_every_step_renders_with_a_formula_a_question_and_figures(number, lang):
    at = open_step(number, lang)
    assert at.session_state["lesson_step"] == number
    assert at.get("latex"), "no formula"
    assert at.get("plotly_chart"), "no figure"  # the training step too, before anything is trained
    assert_valid_figures(at)
    assert not [m.value for e in at.expander for m in e.markdown], "an answer before Reveal"
    assert answer(reveal(at, number))
    if lang == "zh":
        assert any(f"第 {number} 步" in m.value for m in at.markdown)


@pytest.mark.parametrize("number", range(1, len(STEPS) + 1))
def test_every_step_before_and_after_reveal_speaks_chinese(number):
    at = open_step(number, "zh")
    assert_chinese(at, (number, "before Reveal"))
    assert_chinese(reveal(at, number), (number, "after Reveal"))


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
    said = answer(reveal(at, 2))  # the two e's at positions 2 and 3
    assert "largest difference 0." in said and "The very same row" in said
    assert "Set this step up again" in revealed_answer(2, src_text="abcd")  # no equal pair at 2 and 3: it says so


def test_a_step_without_its_setup_says_so_before_its_answer_is_revealed():
    at = open_step(11, architecture="decoder_only")  # the link's own view: the reverse task, not the induction one
    assert not at.get("plotly_chart")  # the step's figures need its setup
    assert any("Set this step up again" in caption.value for caption in at.caption)
    assert "Set this step up again" in answer(reveal(at, 11))


def test_tokens_answer_is_the_first_merge_of_the_seed_corpus():
    assert revealed_answer(1).startswith("` h ` + ` i ` (12 times)")


def test_the_bpe_learner_opens_before_the_merge_it_asks_about_and_marks_it_only_with_the_answer():
    at = open_step(1)
    assert at.session_state["bpe_merges"] == 0
    (before,) = charts(at).values()
    bars = next(trace for trace in before["data"] if trace["type"] == "bar")
    assert HIGHLIGHT not in bars["marker"]["color"] and "next merge" not in page_text(at)
    assert "Adjacent pairs: merge 1 takes the top one" not in page_text(at)
    (after,) = charts(reveal(at, 1)).values()
    bars = next(trace for trace in after["data"] if trace["type"] == "bar")
    assert bars["marker"]["color"][0] == HIGHLIGHT and bars["text"][0] == "12 ← next merge"
    assert bars["y"] == next(trace for trace in before["data"] if trace["type"] == "bar")["y"]  # the same bars


def test_a_link_to_the_bpe_learner_keeps_its_merges():
    at = open_step(1, bpe_merges="3")
    assert at.session_state["bpe_merges"] == 3 and at.session_state["task"] == "en-fr"  # set up, merges kept


def test_embeddings_answer():
    trace = run_text(load_pretrained("reverse").model, TASKS["reverse"], "hello").trace
    token = trace["src_embed.token"][0]
    assert float((token[2] - token[3]).abs().max()) == 0.0
    assert revealed_answer(2).startswith("Token embeddings: largest difference 0.")


def test_positions_differences_are_shown_only_with_the_answer():
    at = open_step(3)
    assert not at.metric and "largest difference" not in page_text(at)
    assert any("Shown with the answer" in c.value for c in at.caption)
    reveal(at, 3)
    none, sinusoidal = (m.value for m in at.metric)
    assert f"{none} without positions" in answer(at) and f"against {sinusoidal} with" in answer(at)
    assert float(none) < 1e-5 < 0.05 < float(sinusoidal)


def test_masks_answer_names_the_cells_on_and_under_the_diagonal():
    trace = run_text(load_pretrained("reverse").model, TASKS["reverse"], "hello", "olleh", pad_to=8).trace
    mask = trace[attention_name("decoder_self", 0, "mask")][0, 0].numpy()
    pads = [i for i, t in enumerate(trace.tgt_tokens) if t == "<pad>"]
    cells = [(q, k) for q in range(8) for k in pads if k <= q and not mask[q, k]]
    assert cells == [(6, 6), (7, 6), (7, 7)]  # two of them on the diagonal: a <pad> query's own key
    revealed = revealed_answer(5)
    assert revealed.startswith("3 cells, (row, column) = (6, 6), (7, 6), (7, 7):"), revealed
    assert "on the diagonal (2:" in revealed and "under it (1)" in revealed
    assert "under the diagonal whose key" not in revealed
    assert "（行, 列）= (6, 6), (7, 6), (7, 7)" in revealed_answer(5, "zh")


@pytest.mark.parametrize(("architecture", "model", "length"), [("encoder_decoder", "reverse", 13),
                                                                   ("decoder_only", "reverse-gpt", 16)])
def test_masks_question_says_the_length_padded_to_and_the_answer_counts_its_cells(architecture, model, length):
    """A link asking for 16 positions (the encoder-decoder's longest is 13): <pad> keys at the end of the target, in
    both forms (the decoder-only model reads "hello=olleh" as 12 tokens, so the step's own 8 adds none there)."""
    pretrained = load_pretrained(model)
    trace = run_text(pretrained.model, pretrained.task, "hello", "olleh", pad_to=16).trace
    mask = trace[attention_name("decoder_self", 0, "mask")][0, 0].numpy()
    pads = [i for i, t in enumerate(trace.tgt_tokens) if t == "<pad>"]
    assert len(trace.tgt_tokens) == length and pads == list(range(pads[0], length))
    cells = [(q, k) for q in range(length) for k in pads if k <= q and not mask[q, k]]
    assert len(cells) == len(pads) * (len(pads) + 1) // 2  # every <pad> key, from its own row down
    listed = ", ".join(f"({q}, {k})" for q, k in cells)
    link = {"architecture": architecture, "task": "reverse", "src_text": "hello", "tgt_text": "olleh", "pad": "16"}
    at = open_step(5, **link)  # a link that chooses the view leaves it as chosen: here the step's own values
    assert f"The target is padded to {length} positions." in page_text(at)  # the length shown, not the asked
    revealed = answer(reveal(at, 5))
    assert revealed.startswith(f"{len(cells)} cells, (row, column) = {listed}:"), revealed
    assert f"on the diagonal ({len(pads)}:" in revealed and f"under it ({len(cells) - len(pads)})" in revealed
    assert f"（行, 列）= {listed}" in revealed_answer(5, "zh", **link)


def decoder_patterns(layer: int = 1) -> dict[str, np.ndarray]:
    """Per head of the shipped en-fr decoder's layer: mean weight on the word itself, the previous one, the first."""
    trace = run_text(load_pretrained("en-fr").model, TASKS["en-fr"], FRENCH).trace
    weights = trace[attention_name("decoder_self", layer, "weights")][0].double().numpy()
    return {"same": np.array([np.mean(np.diag(w)) for w in weights]),
            "previous": np.array([np.mean(np.diag(w, -1)) for w in weights]),
            "first": np.array([np.mean(w[1:, 0]) for w in weights])}


def test_heads_answer_names_the_previous_word_head():
    previous = decoder_patterns()["previous"]
    assert revealed_answer(6).startswith(f"Head {int(np.argmax(previous)) + 1}:")


def test_heads_says_what_each_head_of_this_model_does_and_promises_no_start_of_sentence_head():
    patterns = decoder_patterns()
    at = reveal(open_step(6), 6)
    text = next(m.value for m in at.markdown if "W_O" in m.value)
    assert "another the start of the sentence" not in text and "this model" in text
    revealed = answer(at)
    weight, pattern, head = max((patterns[p][h], p, h) for p in patterns for h in range(4))
    assert (pattern, head) == ("previous", 1)  # the clearest pattern of this layer
    assert f"Head 2: on average {weight:.0%}" in revealed and "That is the clearest pattern in this layer." in revealed
    first = int(np.argmax(patterns["first"]))
    assert patterns["first"][first] < 0.5  # no head of this model looks mostly at the start
    assert (f"No head looks mostly at the first position: at most {patterns['first'][first]:.0%} "
            f"(head {first + 1})") in revealed
    zh = answer(reveal(open_step(6, "zh"), 6))
    assert f"没有哪个头主要看第一个位置：最多 {patterns['first'][first]:.0%}（第 {first + 1} 个头）" in zh


def outlined_tiles(grid: dict) -> list[list[int]]:
    """[layer, head] of each tile of an attention grid whose centre lies inside an outline."""
    heatmap, targets = grid["data"][0], grid["data"][1]  # the click targets sit at the tiles' centres
    centres = [(heatmap["x"].index(x), heatmap["y"].index(y), tile)
               for x, y, tile in zip(targets["x"], targets["y"], targets["customdata"], strict=True)]
    return [tile for outline in outlined(grid) for x, y, tile in centres
            if outline["x0"] < x < outline["x1"] and outline["y0"] < y < outline["y1"]]


def test_heads_outline_and_table_are_shown_only_with_the_answer():
    answer_head = int(np.argmax(decoder_patterns()["previous"]))
    at = open_step(6)
    assert not at.table and not outlined(charts(at)["lesson_grid"])
    assert "58%" not in page_text(at)
    reveal(at, 6)
    (table,) = at.table
    assert list(table.value.iloc[:, 0]) == ["1", "2", "3", "4"]
    assert outlined_tiles(charts(at)["lesson_grid_marked"]) == [[1, answer_head]]  # layer 2, the previous-word head


def test_cross_answer_is_the_word_the_noir_row_looks_at():
    run = run_text(load_pretrained("en-fr").model, TASKS["en-fr"], FRENCH)
    row = run.output_tokens.index("noir")  # row i reads target position i and writes the token after it
    weights = run.trace[attention_name("cross", 1, "weights")][0, 1, row].numpy()
    word = run.trace.src_tokens[int(np.argmax(weights))]
    assert word == "black"
    assert revealed_answer(7).startswith(f"“{word}” (row {row}, labelled “chat”)")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cross_says_where_chinese_puts_time_and_place_in_the_shown_sentence(lang):
    task = TASKS["en-zh"]
    run = run_text(load_pretrained("en-zh").model, task, task.examples[0])
    output = run.output_tokens
    assert list(output[:5]) == ["他", "昨天", "在", "学校", "吃"]  # time and place after 他, before the verb 吃
    at = reveal(open_step(7, lang), 7)
    text = next(m.value for m in at.markdown if "noir" in m.value and ("cross" in m.value or "交叉" in m.value))
    revealed = answer(at)
    if lang == "en":
        assert "moves time and place to the front" not in text and "before the verb" in text
        assert f"output position {output.index('昨天')}, right after “他” and before the verb" in revealed
        assert "moves to the front" not in revealed
    else:
        assert "移到前面" not in text and "“他” 之后、动词之前" in text
        assert f"在输出位置 {output.index('昨天')}，紧跟在 “他” 之后、动词之前" in revealed


def test_decoding_answer_is_the_models_next_word():
    run = run_text(load_pretrained("en-fr").model, TASKS["en-fr"], FRENCH)
    probabilities = next_token_probabilities(run.step(2))
    chosen = TASKS["en-fr"].tgt_vocab.tokens[int(np.argmax(probabilities))]
    assert chosen == run.output_tokens[2] == "noir"
    assert revealed_answer(8).startswith(f"“{chosen}” with probability")


def test_after_the_answer_sampling_draws_the_next_word_and_shows_the_distribution_before_and_after():
    at = reveal(open_step(8), 8)
    assert len(charts(at)["lesson_topk"]["data"]) == 1  # greedy: one distribution
    at.slider(key="temperature").set_value(2.0).run()
    assert not at.exception, [e.value for e in at.exception]
    bars = charts(at)["lesson_sampling"]
    names = [str(trace.get("name")) for trace in bars["data"]]
    assert any(n.startswith("before") for n in names) and any(n.startswith("after") for n in names), names
    assert "With sampling on, this run drew" in answer(at)
    assert "lesson_topk" not in charts(at)


def heatmap_rows(figure: dict) -> int:
    z = figure["data"][0]["z"]  # a list of rows, or Plotly's typed array {"bdata", "dtype", "shape": "rows, cols"}
    return int(z["shape"].split(",")[0]) if isinstance(z, dict) else len(z)


def test_the_next_word_is_nowhere_on_the_page_before_the_answer():
    at = open_step(8)
    assert "noir" not in page_text(at), "the next word shows before Reveal"
    assert "lesson_topk" not in charts(at)
    before = charts(at)["lesson_by_step"]
    assert heatmap_rows(before) == 2  # the steps that wrote "le" and "chat"
    reveal(at, 8)
    after = charts(at)
    assert "noir" in json.dumps(after["lesson_topk"]) and heatmap_rows(after["lesson_by_step_answer"]) == 3
    assert "noir" in "".join(h.proto.body for h in at.get("html") if ALTERNATIVE not in h.proto.body)  # the chips


def test_training_promises_the_time_the_server_keeps_and_draws_its_start():
    at = open_step(9)
    (promise,) = [c.value for c in at.caption if c.value.startswith("Training 400 steps takes about")]
    free = float(promise.split("about ")[1].split(" s")[0])
    busy_minutes = float(promise.split("up to about ")[1].split(" min")[0])
    assert 5 <= free <= 60, promise  # 400 steps of the reverse model took 15 s of one core
    assert busy_minutes * 60 >= MEASURED_BUSY_SECONDS, promise
    assert "the shipped model trained 1500 steps" in promise
    start = charts(at)["lesson_training_start"]
    assert start["layout"]["title"]["text"].startswith("Before training")


def test_training_says_a_short_training_gets_less_than_the_shipped_model():
    task = TASKS["reverse"]
    untrained = Transformer(model_config_for(task), generator=torch.Generator().manual_seed(1)).eval()
    trained = TrainedModel(model=untrained, id=uuid.uuid4().hex, task="reverse", steps=400,
                           history=((1, 3.0, 0.1), (400, 1.0, 0.6)), finished=True, exact_match=0.5, seconds=20.0)
    SPOKEN["lang"] = "en"
    at = run_page("lesson", link={"lesson_step": "9"}, _trained=trained)
    revealed = answer(reveal(at, 9))
    assert "After 400 steps: " in revealed and "The shipped model, trained 1500 steps: 9" in revealed
    assert "A short training gets less than the shipped model: 400 steps instead of 1500" in revealed
    assert "lesson_training_start" not in charts(at)  # trained: the result's curve and animation instead


def test_train_on_the_last_step_trains_a_fresh_model_and_the_answer_measures_it():
    SPOKEN["lang"] = "en"
    at = run_page("lesson", link={"lesson_step": "9", "train_steps": "100"})
    at.button(key="lesson_train").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["_trained"].steps == 100 and at.session_state["weights"] == "trained"
    revealed = answer(reveal(at, 9))
    assert "After 100 steps: " in revealed and "not trained yet" not in revealed, revealed


def test_training_answer_before_training_says_so():
    revealed = revealed_answer(9)
    assert "not trained yet" in revealed and "The shipped model, trained 1500 steps: 9" in revealed


def test_the_training_page_opens_after_a_lesson_step():
    """Bug (found by the tour): a lesson step set every view field to its default, the learning rate and batch
    too, whose default None means "the task's own"; the Training page then raised a TypeError."""
    values = setup_values(STEPS[1])
    assert "train_lr" not in values and "train_batch" not in values
    at = run_page("training", **values)  # the session state a lesson step leaves
    assert not at.exception


def test_the_gpt_step_names_the_head_that_reads_the_prompt_letter_it_writes():
    at = open_step(10)
    assert "lesson_gpt_head" not in charts(at) and not outlined(charts(at)["lesson_gpt_grid"])
    text = answer(reveal(at, 10))
    assert "desserts" in text and "100% of the answer's rows" in text
    assert outlined(charts(at)["lesson_gpt_grid_marked"]), "the head is outlined once revealed"


def test_the_induction_step_finds_the_copying_head_in_layer_two_and_its_partner_in_layer_one():
    at = open_step(11)
    assert "lesson_induction_curve" not in charts(at), "the training curve answers the question: hidden"
    text = answer(reveal(at, 11))
    assert text.startswith("Layer 2, head") and "Its partner sits in layer 1" in text
    curve = charts(at)["lesson_induction_curve"]
    assert any("the repeat" in trace["name"] for trace in curve["data"])


@pytest.mark.parametrize("number", [n for n, step in enumerate(STEPS, start=1) if step.needs])
def test_a_step_about_an_attention_the_model_lacks_says_so_and_opens_on_an_encoder_decoder(number):
    """Cross-attention on a decoder-only model: one sentence instead of the question, and one click to the step
    set up on the paper's model, which then draws its figures."""
    at = open_step(number, architecture="decoder_only", task="reverse")
    assert any("has none: Decoder-only" in m.value for m in at.markdown)
    (button,) = [b for b in at.button if b.label == "Open this step on an encoder-decoder"]
    button.click().run()
    assert not at.exception and not at.error
    assert at.session_state["architecture"] == "encoder_decoder"
    assert not any("has none" in m.value for m in at.markdown) and at.get("plotly_chart")
