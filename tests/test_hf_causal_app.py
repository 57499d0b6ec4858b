"""The app on a decoder-only Hugging Face model (tiny GPT-2 and Llama models built offline): every page draws it or
says what it does not have; the banner, the Decoding bars, Embeddings, Attention's shared key/value heads, the
Overview's counts and the logit lens are the model's own."""

import json

import numpy as np
import pytest
import torch

from tests.test_app import chart_specs, run_page
from tests.test_app_decoder_only import typed_array
from transformer_viz.app.frame.navigation import PAGES
from transformer_viz.app.session.charts import ALTERNATIVE
from transformer_viz.figures.colours import HIGHLIGHT
from transformer_viz.figures.token_axes import token_texts
from transformer_viz.weights import hf, hf_causal, hf_causal_views

missing = hf.missing_reason()
MODEL_PAGES = [page for page in PAGES if page not in ("lesson", "training", "break_it", "compare")]
FAMILIES = ("gpt2", "llama")
PROMPT = "the cat sat on the mat"
pytestmark = pytest.mark.hf


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    if missing is not None:
        pytest.skip(missing)
    from devtools.hf_tiny import save_tiny

    with pytest.MonkeyPatch.context() as patch:  # the server opens folders under TVIZ_HF_DIRS only
        patch.setenv("TVIZ_HF_DIRS", str(tmp_path_factory.getbasetemp()))
        folders = {family: str(save_tiny(family, tmp_path_factory.mktemp(family))) for family in FAMILIES}
        folders["llama3"] = str(save_tiny("llama", tmp_path_factory.mktemp("llama3"),
                                          rope_parameters={"rope_type": "default", "rope_theta": 500000.0}))
        bert = tmp_path_factory.mktemp("bert")  # a config of a family traced nowhere, no weights
        (bert / "config.json").write_text(json.dumps({"model_type": "bert"}))
        folders["bert"] = str(bert)
        yield folders


@pytest.fixture(scope="module")
def loaded(folders):
    return {family: hf_causal.load(folders[family]) for family in FAMILIES}


def app_run(model):
    """The run the app makes of PROMPT (models.run_now: the server's limits)."""
    from transformer_viz.app.server.limits import limits

    return hf_causal.run_text(model, PROMPT, max_new_tokens=limits().input_tokens // 2,
                              max_len=limits().input_tokens)


def view(folders, family, **more):
    return dict(source="hf", hf_model=folders[family], src_text=PROMPT, **more)


def titled(at, words: str) -> dict:
    return next(spec for spec in chart_specs(at) if words in json.dumps(spec["layout"].get("title", "")))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("page", MODEL_PAGES)
def test_every_page_draws_a_decoder_only_hugging_face_model_or_says_what_it_lacks(folders, family, page):
    """Training, Break it and Compare say they work on toy models (tests/test_hf_app.py), the lesson runs its own."""
    at = run_page(page, **view(folders, family))
    assert not at.exception, at.exception[0].message if at.exception else ""
    assert not at.error, at.error[0].value
    texts = " ".join(e.value for e in (*at.caption, *at.info, *at.markdown) if isinstance(e.value, str))
    assert f"Hugging Face model ` {folders[family]} ` ({family}), decoder-only" in texts
    assert at.get("plotly_chart"), "the page drew no figure"


@pytest.mark.parametrize("family", FAMILIES)
def test_the_banner_names_the_model_its_layers_and_its_shared_key_value_heads(folders, family):
    at = run_page("attention", lang="zh", **view(folders, family))
    banner = at.caption[0].value
    assert f"Hugging Face 模型 ` {folders[family]} `（{family}），仅解码器" in banner and "2 层 × 4 个头" in banner
    assert ("4 个查询头共用 2 个键/值头" in banner) == (family == "llama")
    assert ("RMSNorm" in banner) == (family == "llama")


@pytest.mark.parametrize("family", FAMILIES)
def test_decodings_bars_name_the_tokenizers_pieces_and_mark_the_token_written(folders, loaded, family):
    model, run = loaded[family], app_run(loaded[family])
    at = run_page("decoding", **view(folders, family))
    bars = titled(at, "Top 5 of")
    labels, ids = zip(*((label, int(i)) for label, i in bars["data"][0]["customdata"]), strict=True)
    assert list(labels) == token_texts(model.tokenizer.convert_ids_to_tokens(list(ids)), len(ids))
    probabilities = run.trace["logits"][0, -1].softmax(-1)  # (vocab,): the last step's
    assert ids[0] == int(probabilities.argmax())
    highlighted = ids[bars["data"][0]["marker"]["color"].index(HIGHLIGHT)]
    assert highlighted == model.tokenizer.convert_tokens_to_ids(run.output_tokens[-1])  # the token written


def test_an_encoder_decoders_bars_name_its_tokenizers_pieces_too(tmp_path, monkeypatch):
    """They named the task's tokens (or "token 57") before."""
    from devtools.hf_tiny import save_tiny

    monkeypatch.setenv("TVIZ_HF_DIRS", str(tmp_path))
    folder = str(save_tiny("marian", tmp_path / "marian"))
    at = run_page("decoding", source="hf", hf_model=folder, src_text=PROMPT)
    assert not at.exception and not at.error
    labels, ids = zip(*((label, int(i)) for label, i in titled(at, "Top 5 of")["data"][0]["customdata"]), strict=True)
    tokenizer = hf.load(folder).tokenizer
    assert list(labels) == token_texts(tokenizer.convert_ids_to_tokens(list(ids)), len(ids))


def test_embeddings_draw_gpt2s_learned_positions_and_llamas_own_rotation(folders, loaded):
    at = run_page("embeddings", **view(folders, "gpt2"))
    pipeline = titled(at, "The stream: what enters layer 1")  # token | + position | = sum
    position = typed_array(pipeline["data"][1]["z"])  # (T, d_model)
    table = loaded["gpt2"].model.transformer.wpe.weight.detach().numpy()
    np.testing.assert_allclose(position, table[:len(position)], atol=1e-6)
    assert not any("Rotary" in json.dumps(spec["layout"].get("title", "")) for spec in chart_specs(at))

    at = run_page("embeddings", **view(folders, "llama"))
    assert not at.info, "the rotary branch comes before 'no positional encoding'"
    degrees = typed_array(titled(at, "Rotary embeddings")["data"][0]["z"])  # (T, d_head / 2)
    own = loaded["llama"].model.model.rotary_emb.inv_freq.double()  # (d_head / 2,)
    expected = np.degrees((torch.arange(len(degrees), dtype=torch.float64)[:, None] * own).numpy()) % 360
    np.testing.assert_allclose(degrees, expected, atol=1e-3)
    assert any("pairs dimension i with i + d_head/2" in caption.value for caption in at.caption)


def test_embeddings_do_not_draw_rotary_angles_that_are_not_the_models(folders):
    at = run_page("embeddings", **view(folders, "llama3"))  # rope_theta 500,000: not the figure's 10,000
    assert not at.exception and not at.error
    assert "angles of its own" in at.info[0].value
    assert not any("Rotary" in json.dumps(spec["layout"].get("title", "")) for spec in chart_specs(at))


def test_attention_says_which_query_heads_share_a_key_value_head(folders):
    at = run_page("attention", **view(folders, "llama"))
    assert any("query heads 1–2 share key/value head 1; query heads 3–4 share key/value head 2" in caption.value
               for caption in at.caption)
    at = run_page("attention", **view(folders, "gpt2"))
    assert not any("Grouped-query" in caption.value for caption in at.caption)


@pytest.mark.parametrize("head", range(4))
def test_a_cells_arithmetic_reads_the_key_value_head_its_query_head_shares(folders, loaded, head):
    """Query heads 0 and 1 read key/value head 0, heads 2 and 3 key/value head 1: q·k ÷ √d_k is the recorded
    score for each (head 3 has no key/value head of its own number; head 1's own number is another group's)."""
    trace = app_run(loaded["llama"]).trace
    at = run_page("attention", **view(folders, "llama", layer=1, head=head, cell_query=5, cell_key=3))
    assert not at.exception and not at.error
    metrics = {metric.label: float(metric.value) for metric in at.metric if metric.label != "mask (✓ = may attend)"}
    assert metrics["score"] == pytest.approx(float(trace["decoder.layers.1.self_attn.scores"][0, head, 5, 3]),
                                             abs=2e-3)
    assert metrics["q·k"] / metrics["÷ √d_k (d_k = 8)"] == pytest.approx(metrics["score"], abs=2e-3)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("family", FAMILIES)
def test_inside_one_head_draws_the_models_own_head_and_the_key_value_head_it_reads(folders, loaded, family, lang):
    """Layer 2, query head 4: its weights are the trace's; Llama turns q and k (Hugging Face's pairs) and reads
    key/value head 2, shared with query head 3; GPT-2 has neither step nor caption."""
    trace = app_run(loaded[family]).trace
    at = run_page("head", lang=lang, **view(folders, family, layer=1, head=3))
    assert not at.exception and not at.error and not at.info
    titles = " ".join(json.dumps(spec["layout"].get("title", ""), ensure_ascii=False) for spec in chart_specs(at))
    weights = next(spec for spec in chart_specs(at) if "softmax" in json.dumps(spec["layout"].get("title", "")))
    recorded = trace["decoder.layers.1.self_attn.weights"][0, 3].numpy()  # (q_len, k_len)
    drawn = typed_array(weights["data"][0]["z"])
    blocked = np.isnan(drawn)  # the future: drawn by the grey layer, written "0"
    np.testing.assert_allclose(drawn[~blocked], recorded[~blocked], atol=1e-5)
    assert blocked.any() and (recorded[blocked] == 0).all()
    captions = " ".join(caption.value for caption in at.caption)
    shared = {"en": "query head 4 reads key/value head 2, which query heads 3–4 share",
              "zh": "查询头 4 读取键/值头 2，查询头 3–4 共用这个键/值头"}[lang]
    turn = {"en": "pair of dimensions (i, i + d_head/2)", "zh": "每对维度 (i, i + d_head/2)"}[lang]
    assert (shared in captions) == (turn in titles) == ("q′·k′" in titles) == (family == "llama")


@pytest.mark.parametrize("family", FAMILIES)
def test_the_overview_counts_the_models_own_parameters_per_block(folders, loaded, family):
    model = loaded[family].model
    at = run_page("overview", **view(folders, family))
    assert at.metric[0].value == f"{sum(p.numel() for p in model.parameters()):,}"
    diagram = json.dumps(chart_specs(at)[0])
    layers = model.transformer.h if family == "gpt2" else model.model.layers
    attention = layers[0].attn if family == "gpt2" else layers[0].self_attn
    assert f"{sum(p.numel() for p in attention.parameters()):,} params" in diagram
    assert f"{sum(p.numel() for p in layers[0].mlp.parameters()):,} params" in diagram
    assert ("positional" in diagram) and ("Cross-attention" not in diagram)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_logit_lens_ends_with_the_models_own_prediction(folders, loaded, family):
    model, trace = loaded[family], app_run(loaded[family]).trace
    at = run_page("layers", **view(folders, family))
    lens = titled(at, "Logit lens")["data"][0]
    best = trace["logits"][0].softmax(-1).max(-1)  # (T,) each
    assert lens["text"][-1] == token_texts(model.tokenizer.convert_ids_to_tokens(best.indices.tolist()), len(best[0]))
    np.testing.assert_allclose(typed_array(lens["z"])[-1], best.values.numpy(), atol=1e-5)
    assert len(lens["text"]) == model.config.n_decoder_layers + 1  # the embeddings, then each layer


@pytest.mark.parametrize("family", FAMILIES)
def test_masks_pad_the_stream_and_never_let_a_token_read_the_padding(folders, family):
    """The prompt and a typed answer, padded: GPT-2 pads with its end token, shown as <pad> all the same."""
    at = run_page("masks", pad=24, **view(folders, family, tgt_text="on the mat"))
    assert not at.exception and not at.error and not at.info
    chips = "".join(html.proto.body for html in at.get("html") if ALTERNATIVE not in html.proto.body)  # not a figure's
    assert "&lt;pad&gt;" in chips
    combined = typed_array(chart_specs(at)[2]["data"][0]["z"])  # (24, 24): padding, look-ahead, combined
    real = 24 - chips.count("&lt;pad&gt;")
    assert combined.shape == (24, 24) and not combined[:, real:].any() and combined[real - 1, :real].all()


def test_a_family_traced_nowhere_names_both_kinds_in_both_languages(folders):
    at = run_page("attention", **view(folders, "bert"))
    assert "type 'bert' are not traced here" in at.error[0].value and "GPT-2 or Llama-layout" in at.error[0].value
    at = run_page("attention", lang="zh", **view(folders, "bert"))
    assert "GPT-2、Llama 结构的仅解码器模型" in at.error[0].value


def test_a_decoder_only_model_beyond_the_servers_size_is_refused(folders, monkeypatch):
    from dataclasses import replace

    from transformer_viz.app.server import models

    small = replace(models.limits(), hf_parameters=1000)
    monkeypatch.setattr(models, "limits", lambda: small)
    models.hugging_face_model.clear()
    try:
        at = run_page("attention", **view(folders, "llama"))
        assert "parameters; this server loads models of at most 1,000" in at.error[0].value
    finally:
        models.hugging_face_model.clear()


@pytest.mark.parametrize("family", FAMILIES)
def test_parameters_are_counted_in_the_toy_decoder_only_models_blocks(loaded, family):
    """The keys of summary.parameter_counts for a toy decoder-only model of the family's positions (GPT-2's
    readout is tied to its token table: counted there once), every level the sum of the one below."""
    from transformer_viz.config import ModelConfig
    from transformer_viz.model import build_model
    from transformer_viz.model.summary import parameter_counts

    counts = hf_causal_views.parameter_counts(loaded[family])
    toy = ModelConfig(src_vocab_size=20, tgt_vocab_size=20, architecture="decoder_only", n_decoder_layers=2,
                      positional="learned" if family == "gpt2" else "rotary")
    expected = set(parameter_counts(build_model(toy))) - ({"output_proj"} if family == "gpt2" else set())
    assert set(counts) == expected
    assert counts["total"] == sum(p.numel() for p in loaded[family].model.parameters())
    assert counts["total"] == sum(counts[key] for key in counts if "." not in key and key != "total")
    for layer in ("decoder.layers.0", "decoder.layers.1"):
        assert counts[layer] == sum(counts[f"{layer}.{block}"] for block in ("self_attn", "ffn", "norm1", "norm2"))
