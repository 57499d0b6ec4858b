"""The link of a view (transformer_viz/app/session/link.py): ids, never labels; every field read back as written."""

import math
from dataclasses import replace

import pytest

from transformer_viz.app.server.state import VIEW_FIELDS, View
from transformer_viz.app.session.link import link_params, read_params

# One value of every field that is not its default, as a user could choose it.
CHOSEN = View(lang="zh", source="hf", hf_model="Helsinki-NLP/opus-mt-en-zh", task="en-fr", weights="checkpoint:mine",
              architecture="decoder_only", d_model=32, n_heads=2, n_encoder_layers=3, n_decoder_layers=1, d_ff=64,
              max_len=32, positional="learned", norm_first=False, scale_embeddings=True, embed_norm=True,
              mask_value=-math.inf, seed=7, src_text="the black cat", tgt_text="le chat", kind="encoder_self", layer=0,
              head=3, value="scores", query=2, pad=16, mask_kind="encoder_self", cell_query=3, cell_key=0, step=6,
              output=3, temperature=0.7, top_k=5, top_p=0.85, sample_seed=42,
              side="tgt", stack="encoder", dims=(1, 5), train_steps=400, train_lr=0.003, train_batch=64,
              train_from="current", lesson_step=4, present=True, bpe_corpus="low lower", bpe_merges=3,
              breaks=("no_scale", "no_look_ahead"), ablate=("cross-2-1",), ablation="mean", a_weights="random",
              a_variant="one_head", a_breaks=("no_positions",), a_ablate=("encoder_self-1-1",), b_weights="pretrained",
              b_variant="post_ln", b_breaks=("no_scale",), b_ablate=("cross-1-2", "cross-2-2"))


def typed(values: dict) -> View:
    return View(**{field: tuple(value) if isinstance(value, list) else value for field, value in values.items()})


def test_every_field_of_a_view_comes_back_from_its_link():
    differs = [f for f in VIEW_FIELDS if getattr(CHOSEN, f) == getattr(View(), f)]
    assert not differs  # the case above covers every field
    values, unreadable = read_params(link_params(CHOSEN))
    assert not unreadable and typed(values) == CHOSEN


def test_a_float_comes_back_exactly():
    view = replace(View(), train_lr=0.000123456789)
    assert typed(read_params(link_params(view))[0]) == view


def test_the_default_view_has_an_empty_link_and_defaults_are_left_out():
    assert link_params(View()) == {}
    assert link_params(replace(View(), task="sort")) == {"task": ["sort"]}


def test_a_link_names_ids_not_labels():
    params = link_params(CHOSEN)
    assert params["task"] == ["en-fr"] and params["kind"] == ["encoder_self"] and params["lang"] == ["zh"]
    assert params["weights"] == ["checkpoint:mine"] and params["norm_first"] == ["false"]
    assert params["cell_query"] == ["3"]  # a position, not "3: noir"
    assert params["layer"] == ["1"] and params["head"] == ["4"]  # layers and heads count from 1, as on screen
    assert params["breaks"] == ["no_scale", "no_look_ahead"]  # a multiple choice: one parameter per item
    assert params["mask_value"] == ["-inf"]
    assert (params["temperature"], params["top_k"], params["top_p"], params["sample_seed"]) == (
        ["0.7"], ["5"], ["0.85"], ["42"])  # sampling, as its sliders show it


@pytest.mark.parametrize("field, text", [("layer", "two"), ("d_model", "inf"), ("d_model", "1.5"), ("seed", "nan"),
                                         ("present", "yes"), ("lang", "klingon"), ("mask_value", "nan"),
                                         ("dims", "x")])
def test_a_text_that_is_no_value_of_its_field_is_named(field, text):
    values, unreadable = read_params({field: [text], "src_text": ["abc"]})
    assert unreadable == [field] and values == {"src_text": "abc"}


def test_an_older_link_naming_the_language_by_its_name_still_opens_in_it():
    assert read_params({"lang": ["中文"]}) == ({"lang": "zh"}, [])


def test_parameters_that_are_no_view_field_are_ignored():
    assert read_params({"room": ["K7QX"], "utm_source": ["mail"]}) == ({}, [])


def test_a_multiple_choice_reads_a_bounded_number_of_items():
    values, _ = read_params({"dims": [str(i) for i in range(10_000)]})
    assert len(values["dims"]) == 64
