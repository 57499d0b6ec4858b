"""Sampling the next token (transformer_viz/model/sampling.py): the distribution a token is drawn from, against
Hugging Face's warpers and cases worked out by hand; draws that follow it and a seed that fixes them; the Decoding
page's sampling row, its figure and its link."""

import html
import math
import re

import pytest
import torch
from helpers import make_model, random_ids
from test_app import chart_specs, run_page

from transformer_viz.analysis.inference import run_text
from transformer_viz.app.server.state import View
from transformer_viz.data.tasks import TASKS
from transformer_viz.model import Transformer
from transformer_viz.model.sampling import Sampling, next_tokens, sampling_distribution


def distribution(probabilities, **settings) -> list[float]:
    """sampling_distribution of the logits log(probabilities), in float64."""
    logits = torch.tensor(probabilities, dtype=torch.float64).log()
    return sampling_distribution(logits, Sampling(**settings)).tolist()


# --- the distribution ----------------------------------------------------------------------------------------

@pytest.mark.hf
def test_the_distribution_is_hugging_faces_temperature_then_top_k_then_top_p():
    """The independent reference: transformers' own warpers, in the order its generate applies them."""
    warpers = pytest.importorskip("transformers.generation.logits_process")
    generator = torch.Generator().manual_seed(0)
    for dtype, tolerance in ((torch.float64, 1e-12), (torch.float32, 1e-6)):
        for _ in range(200):
            logits = 3 * torch.randn(4, 30, generator=generator, dtype=dtype)  # (batch, vocab)
            temperature = float(torch.empty(1).uniform_(0.2, 2.0, generator=generator))
            top_k = int(torch.randint(0, 12, (1,), generator=generator))
            top_p = float(torch.empty(1).uniform_(0.05, 1.0, generator=generator))
            scores = warpers.TemperatureLogitsWarper(temperature)(None, logits)
            if top_k:
                scores = warpers.TopKLogitsWarper(top_k)(None, scores)
            scores = warpers.TopPLogitsWarper(top_p)(None, scores)
            ours = sampling_distribution(logits, Sampling(temperature, top_k, top_p))
            torch.testing.assert_close(ours, scores.softmax(dim=-1), rtol=0, atol=tolerance)


def test_temperature_one_is_the_models_own_softmax_and_a_half_squares_it():
    assert distribution([0.5, 0.3, 0.2]) == pytest.approx([0.5, 0.3, 0.2])
    assert distribution([0.5, 0.3, 0.2], temperature=0.5) == pytest.approx([0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38])
    assert distribution([0.5, 0.3, 0.2], temperature=1e6) == pytest.approx([1 / 3] * 3)  # hot: nearly uniform


@pytest.mark.parametrize("temperature", [0, 1e-30, 1e-300])
def test_temperature_zero_or_towards_it_puts_everything_on_the_argmax(temperature):
    logits = torch.tensor([[1.0, 3.0, 2.0], [-5e3, 4e3, 9e3]])  # large logits: x / 1e-300 would be inf - inf
    after = sampling_distribution(logits, Sampling(temperature=temperature))
    assert after.tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def test_greedy_is_the_first_of_tied_tokens_and_sampling_keeps_ties_alike():
    assert distribution([0.25, 0.5, 0.25], temperature=0) == [0.0, 1.0, 0.0]
    assert distribution([0.4, 0.4, 0.2], temperature=0) == [1.0, 0.0, 0.0]  # torch.argmax: the first
    assert distribution([0.4, 0.4, 0.2], temperature=1e-30) == pytest.approx([0.5, 0.5, 0.0])


def test_top_k_keeps_the_k_most_probable_and_top_k_one_is_greedy():
    assert distribution([0.5, 0.3, 0.2], top_k=2) == pytest.approx([0.625, 0.375, 0.0])
    assert distribution([0.2, 0.5, 0.3], top_k=1, temperature=2.0) == [0.0, 1.0, 0.0]
    assert distribution([0.5, 0.3, 0.2], top_k=3) == distribution([0.5, 0.3, 0.2], top_k=0)
    assert distribution([0.5, 0.3, 0.2], top_k=99) == distribution([0.5, 0.3, 0.2])  # more than the vocabulary: all


def test_top_k_keeps_every_token_tied_with_the_kth():
    """As Hugging Face's TopKLogitsWarper: the cut never chooses between tokens of equal probability."""
    assert distribution([0.4, 0.2, 0.2, 0.2], top_k=2) == pytest.approx([0.4, 0.2, 0.2, 0.2])


def test_top_p_keeps_the_smallest_set_of_most_probable_tokens_that_reaches_p():
    probabilities = [0.5, 0.25, 0.15, 0.1]  # cumulative: 0.5, 0.75, 0.9, 1.0
    assert distribution(probabilities, top_p=0.4) == pytest.approx([1.0, 0, 0, 0])
    assert distribution(probabilities, top_p=0.7) == pytest.approx([2 / 3, 1 / 3, 0, 0])
    assert distribution(probabilities, top_p=0.8) == pytest.approx([0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0])
    assert distribution(probabilities, top_p=1e-9) == pytest.approx([1.0, 0, 0, 0])  # the most probable, always


def test_top_p_keeps_every_token_tied_with_the_least_probable_one_kept():
    """Stated tie behaviour: 0.5 + 0.25 + 0.125 reaches 0.8, and the other 0.125 is kept with it."""
    assert distribution([0.5, 0.25, 0.125, 0.125], top_p=0.8) == pytest.approx([0.5, 0.25, 0.125, 0.125])
    assert distribution([0.5, 0.25, 0.125, 0.125], top_p=0.7) == pytest.approx([2 / 3, 1 / 3, 0, 0])


def test_top_p_measures_what_top_k_left():
    """Renormalized after top-k: [0.5, 0.3] of [0.5, 0.3, 0.2] is [0.625, 0.375], which p = 0.6 cuts to one."""
    assert distribution([0.5, 0.3, 0.2], top_k=2, top_p=0.6) == pytest.approx([1.0, 0, 0])
    assert distribution([0.5, 0.3, 0.2], top_p=0.6) == pytest.approx([0.625, 0.375, 0])


@pytest.mark.parametrize("settings, message", [
    ({"temperature": -1.0}, "temperature must be a number of 0 or more"),
    ({"temperature": math.nan}, "temperature must be a number of 0 or more"),
    ({"temperature": math.inf}, "temperature must be a number of 0 or more"),
    ({"temperature": "1"}, "temperature must be a number of 0 or more"),
    ({"temperature": True}, "temperature must be a number of 0 or more"),
    ({"top_k": -1}, "top_k must be a whole number of 0 or more"),
    ({"top_k": 2.0}, "top_k must be a whole number of 0 or more"),
    ({"top_k": None}, "top_k must be a whole number of 0 or more"),
    ({"top_p": 0}, "top_p must be a number above 0 and at most 1"),
    ({"top_p": 1.5}, "top_p must be a number above 0 and at most 1"),
    ({"top_p": math.nan}, "top_p must be a number above 0 and at most 1"),
    ({"top_p": "0.9"}, "top_p must be a number above 0 and at most 1"),
    ({"seed": -1}, "seed must be a whole number from 0"),
    ({"seed": 2**63}, "seed must be a whole number from 0"),
    ({"seed": 1.0}, "seed must be a whole number from 0"),
])
def test_settings_a_student_gets_wrong_are_explained(settings, message):
    with pytest.raises(ValueError, match=message):
        Sampling(**settings)


# --- the draws -----------------------------------------------------------------------------------------------

def test_draws_follow_the_distribution_and_never_pick_a_token_it_left_out():
    logits = torch.tensor([0.5, 0.3, 0.15, 0.05]).log().expand(4000, 4)  # (batch, vocab): 4000 draws at once
    sampling = Sampling(temperature=1.0, top_k=3)
    drawn = next_tokens(logits, sampling, sampling.generator())
    shares = torch.bincount(drawn, minlength=4) / len(drawn)
    assert shares[3] == 0
    torch.testing.assert_close(shares, torch.tensor([0.5, 0.3, 0.15, 0]) / 0.95, rtol=0, atol=0.03)


def test_the_same_seed_writes_the_same_tokens_and_the_global_rng_is_untouched():
    model = make_model()
    src = random_ids(3, 6, 20)
    before = torch.get_rng_state()
    outputs = {seed: model.generate(src, 10, bos_id=1, eos_id=2, sampling=Sampling(2.0, seed=seed))[0]
               for seed in range(4)}
    again = model.generate(src, 10, bos_id=1, eos_id=2, sampling=Sampling(2.0, seed=3))[0]
    assert torch.equal(torch.get_rng_state(), before)  # never the global RNG
    assert torch.equal(again, outputs[3])
    assert len({tuple(ids.flatten().tolist()) for ids in outputs.values()}) > 1  # a hot random model: seeds differ


def test_each_sampled_token_was_possible_under_its_steps_distribution():
    model = make_model()
    src = random_ids(2, 5, 20)
    sampling = Sampling(temperature=1.5, top_k=3, top_p=0.9, seed=1)
    tgt_ids, steps = model.generate(src, 8, bos_id=1, eos_id=2, sampling=sampling)
    for k, trace in enumerate(steps):
        after = sampling_distribution(trace["logits"][:, -1], sampling)  # (batch, vocab)
        finished = (tgt_ids[:, 1: k + 1] == 2).any(dim=1)
        drawn = after[torch.arange(2), tgt_ids[:, k + 1]]
        assert torch.all(drawn[~finished] > 0)


def test_top_k_one_writes_the_greedy_output_at_any_temperature_and_seed():
    model = make_model()
    src = random_ids(2, 6, 20)
    greedy, _ = model.generate(src, 10, bos_id=1, eos_id=2)
    for seed in range(3):
        sampled, _ = model.generate(src, 10, bos_id=1, eos_id=2, sampling=Sampling(1.7, top_k=1, seed=seed))
        assert torch.equal(sampled, greedy)


# --- the Decoding page ---------------------------------------------------------------------------------------

LINKED = {"src_text": "hello", "weights": "random", "temperature": "1.5", "top_k": "6", "top_p": "0.9",
          "sample_seed": "42"}
SAMPLED = Sampling(1.5, 6, 0.9, 42)


def random_run(text: str, sampling: Sampling | None):
    """The run the app makes of `text` with the random weights of seed 0 (models.random_model)."""
    config = View(weights="random").model_config()
    model = Transformer(config, generator=torch.Generator().manual_seed(0)).eval()
    return run_text(model, TASKS["reverse"], text, sampling=sampling)


def sliders(at) -> dict:
    return {s.key: (s.value, s.proto.disabled) for s in at.slider}


def sampling_figures(at) -> list[dict]:
    """The page's before-and-after figures: three bar series (before, after, the token drawn)."""
    return [spec for spec in chart_specs(at) if [t["type"] for t in spec["data"]] == ["bar"] * 3]


def drawn_token(at) -> str:
    """The token the before-and-after figure marks as drawn."""
    (figure,) = sampling_figures(at)
    ((_, token_id),) = figure["data"][2]["customdata"]
    return TASKS["reverse"].tgt_vocab.tokens[token_id]


def test_a_link_restores_the_sampling_settings_and_the_page_draws_with_them():
    at = run_page("decoding", link=LINKED)
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = sliders(at)
    assert {key: shown[key] for key in ("temperature", "top_k", "top_p", "sample_seed")} == {
        "temperature": (1.5, False), "top_k": (6, False), "top_p": (0.9, False), "sample_seed": (42, False)}
    assert {key: at.query_params[key] for key in LINKED} == LINKED
    expected = random_run("hello", SAMPLED)
    assert expected.output_tokens != random_run("hello", None).output_tokens  # the settings change the output
    last = expected.output_tokens[-1]
    assert any(f"draws ` {last} `" in m.value for m in at.markdown)


def test_with_a_temperature_the_page_shows_the_distribution_before_and_after_with_the_drawn_token():
    at = run_page("decoding", link={**LINKED, "step": "2"})
    (figure,) = sampling_figures(at)
    before, after, drawn = figure["data"]
    assert (before["name"], after["name"], drawn["name"]) == (
        "before: softmax of the logits", "after: drawn from", "the token drawn")
    assert len(before["y"]) == len(after["y"]) + 1 >= 6  # every token shown has both bars
    assert drawn_token(at) == random_run("hello", SAMPLED).output_tokens[1]
    assert drawn["text"][0].endswith("← drawn")


def test_a_new_seed_draws_again_and_the_figure_follows_it():
    """The run and the figure cache key on the sampling settings: the same text with another seed is another run."""
    at = run_page("decoding", link=LINKED)
    at.slider(key="sample_seed").set_value(7).run()
    assert not at.exception and at.query_params["sample_seed"] == "7"
    run = random_run("hello", Sampling(1.5, 6, 0.9, 7))
    step = len(run.output_tokens)  # the last step is shown
    assert any(f"Step {step}:" in m.value and f"draws ` {run.output_tokens[-1]} `" in m.value for m in at.markdown)
    assert drawn_token(at) == run.output_tokens[-1]


def test_greedy_is_the_default_and_keeps_the_page_as_it_was():
    at = run_page("decoding", src_text="hello")
    assert not at.exception
    shown = sliders(at)
    assert shown["temperature"] == (0.0, False)
    assert all(shown[key][1] for key in ("top_k", "top_p", "sample_seed"))  # disabled until a temperature is chosen
    assert not any(key in at.query_params for key in ("temperature", "top_k", "top_p", "sample_seed"))
    assert any("chooses" in m.value for m in at.markdown)
    assert not sampling_figures(at)


def test_choosing_a_temperature_on_the_page_samples_and_writes_it_into_the_link():
    at = run_page("decoding", src_text="hello", weights="random")
    at.slider(key="temperature").set_value(1.5).run()
    at.slider(key="top_k").set_value(6).run()
    at.slider(key="top_p").set_value(0.9).run()
    at.slider(key="sample_seed").set_value(42).run()
    assert not at.exception
    assert {key: at.query_params[key] for key in LINKED} == LINKED
    assert any(f"draws ` {random_run('hello', SAMPLED).output_tokens[-1]} `" in m.value for m in at.markdown)


@pytest.mark.parametrize("link", [{"temperature": "50"}, {"temperature": "-1"}, {"temperature": "nan"}])
def test_a_linked_temperature_the_slider_cannot_show_decodes_greedily(link):
    at = run_page("decoding", link={"src_text": "hello", **link})
    assert not at.exception and sliders(at)["temperature"] == (0.0, False)
    assert any("chooses" in m.value for m in at.markdown)


@pytest.mark.parametrize("architecture", ["encoder_decoder", "decoder_only"])
@pytest.mark.parametrize("sampled", [True, False])
def test_the_decoding_pages_sentences_say_most_likely_only_when_decoding_is_greedy(architecture, sampled):
    """Sampling on, the page says the next token is drawn from the distribution after temperature, top-k and
    top-p, and no sentence says it is the most likely one (the slider labels and the settings' caption say what 0
    does); off, it says greedy decoding takes the most likely."""
    link = {"src_text": "hello", "architecture": architecture, **({"temperature": "1.5"} if sampled else {})}
    at = run_page("decoding", link=link)
    assert not at.exception, at.exception
    intro, sentences = at.markdown[0].value, " ".join(m.value for m in at.markdown)
    if sampled:
        assert "draws the next token at random from the distribution after temperature, top-k and top-p" in intro
        assert "most likely" not in sentences and "chooses" not in sentences and "draws `" in sentences
    else:
        assert "predicts the most likely next token" in intro
        assert "draw" not in sentences and "chooses `" in sentences


def test_other_pages_show_the_run_the_sampling_settings_decode():
    """The view's run decodes with them everywhere: the Attention page's output is the sampled one."""
    at = run_page("attention", link=LINKED)
    assert not at.exception
    assert output_chips(at) == list(random_run("hello", SAMPLED).output_tokens)


def output_chips(at) -> list[str]:
    """The tokens of the page's "Model output" chips."""
    (body,) = [h.proto.body for h in at.get("html") if "Model output" in h.proto.body]
    return [html.unescape(token) for token in re.findall(r'class="tv-chip [^"]*">([^<]*)<sub>', body)]


def test_the_sampling_row_speaks_chinese():
    from test_chinese_everywhere import assert_chinese

    at = run_page("decoding", link={**LINKED, "lang": "zh"})
    assert_chinese(at, "decoding with sampling")
    assert [series["name"] for series in sampling_figures(at)[0]["data"]] == [
        "之前：分数的 softmax", "之后：从中抽取", "抽到的词元"]


def test_the_masks_page_teacher_forces_the_greedy_output_when_the_view_samples():
    """A hot sample of random weights writes <pad> and <bos> anywhere: not a target a batch would hold."""
    link = {"src_text": "hello", "task": "reverse", "weights": "random", "temperature": "10", "sample_seed": "0"}
    at = run_page("masks", link=link)
    assert not at.exception and not at.error, [e.value for e in at.error]
