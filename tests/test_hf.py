"""Hugging Face encoder-decoders traced into the views' names: tiny Marian, BART and T5 models built offline."""

import sys

import pytest
import torch

from transformer_viz.trace.names import ATTENTION_KINDS, attention_name
from transformer_viz.weights import hf

missing = hf.missing_reason()
needs_transformers = pytest.mark.skipif(missing is not None, reason=f"{missing}")
pytestmark = pytest.mark.hf
FAMILIES = ["marian", "bart", "t5"]


@pytest.fixture(scope="module", params=FAMILIES)
def tiny(request, tmp_path_factory):
    if missing is not None:
        pytest.skip(missing)
    from devtools.hf_tiny import save_tiny

    return hf.load(str(save_tiny(request.param, tmp_path_factory.mktemp(request.param))))


def test_without_the_extra_loading_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers raises ImportError
    assert "pip install" in hf.missing_reason()
    with pytest.raises(ValueError, match=r"pip install '\.\[hf\]'"):
        hf.load("Helsinki-NLP/opus-mt-en-zh")


@needs_transformers
def test_a_model_that_is_not_here_is_named_and_nothing_is_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="downloads are off"):
        hf.load("Helsinki-NLP/opus-mt-xx-yy")
    with pytest.raises(ValueError, match="could not be loaded"):
        hf.load(str(tmp_path))  # an empty folder
    with pytest.raises(ValueError, match="Name a Hugging Face model"):
        hf.load("  ")
    with pytest.raises(ValueError, match="Marian, BART or T5"):
        hf.family_of("gpt2")


@needs_transformers
def test_a_model_too_large_or_of_another_family_is_refused_before_its_weights_are_read(tiny, tmp_path, monkeypatch):
    import json

    import transformers

    def no_weights(*args, **kwargs):
        raise AssertionError("weights read")

    monkeypatch.setattr(transformers.AutoModelForSeq2SeqLM, "from_pretrained", no_weights)
    parameters = sum(p.numel() for p in tiny.model.parameters())
    with pytest.raises(ValueError, match=f"has {parameters:,} parameters; this server loads models of at most 1,000"):
        hf.load(tiny.config.name, max_parameters=1000)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))  # a config, no weights
    with pytest.raises(ValueError, match="type 'gpt2' are not traced here"):
        hf.load(str(tmp_path))


@needs_transformers
def test_every_name_of_the_contract_is_recorded_with_its_shape(tiny):
    run = hf.run_text(tiny, "the cat sat on the mat", "le chat est sur le tapis", pad_to=16)
    trace, config = run.trace, tiny.config
    batch, source, target = 1, len(trace.src_tokens), len(trace.tgt_tokens)
    heads, d_head = config.n_heads, config.d_head
    assert source == 16 and trace.src_tokens[-1] == tiny.tokenizer.pad_token
    for kind, attention in ATTENTION_KINDS.items():
        rows = source if attention.query_side == "src" else target
        columns = source if attention.key_side == "src" else target
        for layer in range(trace.n_layers(kind)):
            def recorded(leaf, kind=kind, layer=layer):
                return trace[attention_name(kind, layer, leaf)]
            assert recorded("q").shape == (batch, heads, rows, d_head)
            assert recorded("k").shape == recorded("v").shape == (batch, heads, columns, d_head)
            for leaf in ("scores", "masked_scores", "weights"):
                assert recorded(leaf).shape == (batch, heads, rows, columns)
            assert recorded("mask").shape == (batch, 1, rows, columns) and recorded("mask").dtype == torch.bool
            assert recorded("out").shape == (batch, rows, config.d_model)
    for stack, length in (("encoder", source), ("decoder", target)):
        for layer in range(config.n_encoder_layers if stack == "encoder" else config.n_decoder_layers):
            assert trace[f"{stack}.layers.{layer}.ffn.hidden"].shape == (batch, length, config.d_ff)
            assert trace[f"{stack}.layers.{layer}.resid_post"].shape == (batch, length, config.d_model)
    assert trace["logits"].shape == (batch, target, config.tgt_vocab_size)
    assert all(not tensor.is_floating_point() or torch.isfinite(tensor).all() for tensor in trace.values())
    if config.family == "t5":  # relative position biases, no encoding: nothing faked
        assert "src_embed.position" not in trace and config.positional == "relative"
    else:
        assert trace["src_embed.position"].shape == (source, config.d_model)


@needs_transformers
def test_the_weights_are_the_models_own_attentions_and_follow_the_masks(tiny):
    source = tiny.tokenizer("the dog sees a cat", return_tensors="pt")
    src_ids = torch.nn.functional.pad(source.input_ids, (0, 3), value=tiny.config.pad_id)
    src_mask = torch.nn.functional.pad(source.attention_mask, (0, 3), value=0)
    tgt_ids = torch.tensor([[tiny.model.config.decoder_start_token_id, 5, 6, 7]])
    _, trace = hf.run_with_trace(tiny, src_ids, tgt_ids, src_mask)
    with torch.no_grad():
        own = tiny.model(input_ids=src_ids, attention_mask=src_mask, decoder_input_ids=tgt_ids,
                         output_attentions=True, use_cache=False)
    for kind, attentions in (("encoder_self", own.encoder_attentions), ("decoder_self", own.decoder_attentions),
                             ("cross", own.cross_attentions)):
        for layer, expected in enumerate(attentions):
            weights = trace[attention_name(kind, layer, "weights")]
            torch.testing.assert_close(weights, expected, atol=1e-5, rtol=1e-4)
            mask = trace[attention_name(kind, layer, "mask")]
            assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()
            torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    assert not trace[attention_name("cross", 0, "mask")][0, 0, :, -3:].any()  # the padding is never read
    decoder_mask = trace[attention_name("decoder_self", 0, "mask")][0, 0]
    assert torch.equal(decoder_mask, torch.ones(4, 4, dtype=torch.bool).tril())  # look-ahead


@needs_transformers
def test_the_stacks_outputs_are_the_models_own_last_hidden_states(tiny):
    """encoder.out and decoder.out are what each stack returns (T5's: after its final LayerNorm), as for the toy
    model; the logit lens reads the layers' streams through the final norm itself, its last row the logits."""
    src_ids = tiny.tokenizer("the dog sees a cat", return_tensors="pt").input_ids
    tgt_ids = torch.tensor([[tiny.model.config.decoder_start_token_id, 5, 6, 7]])
    logits, trace = hf.run_with_trace(tiny, src_ids, tgt_ids)
    with torch.no_grad():
        own = tiny.model(input_ids=src_ids, decoder_input_ids=tgt_ids, output_hidden_states=True, use_cache=False)
        last_layer = trace[f"decoder.layers.{tiny.config.n_decoder_layers - 1}.resid_post"]  # (1, T, d_model)
        lens_logits = hf.readout(tiny, last_layer)  # (1, T, vocab)
    torch.testing.assert_close(trace["encoder.out"], own.encoder_last_hidden_state, atol=1e-5, rtol=0)
    torch.testing.assert_close(trace["decoder.out"], own.decoder_hidden_states[-1], atol=1e-5, rtol=0)
    torch.testing.assert_close(lens_logits, own.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(logits, own.logits, atol=1e-5, rtol=0)


@needs_transformers
def test_the_scores_are_q_dot_k_scaled_as_the_family_does(tiny):
    _, trace = hf.run_with_trace(tiny, tiny.tokenizer("a cat", return_tensors="pt").input_ids, torch.tensor([[0, 4]]))
    q, k = trace["decoder.layers.1.cross_attn.q"], trace["decoder.layers.1.cross_attn.k"]
    scale = 1.0 if tiny.family == "t5" else tiny.config.d_head ** -0.5  # T5 has the scale in its weights
    torch.testing.assert_close(trace["decoder.layers.1.cross_attn.scores"], q @ k.transpose(-2, -1) * scale)


@needs_transformers
def test_greedy_steps_are_what_a_pass_over_each_prefix_computes(tiny):
    run = hf.run_text(tiny, "the teacher reads a book", max_new_tokens=6)
    assert 1 <= run.n_steps <= 6 and len(run.output_tokens) == run.n_steps
    src_ids = tiny.tokenizer("the teacher reads a book", return_tensors="pt").input_ids
    decoder_ids = torch.tensor([tiny.tokenizer.convert_tokens_to_ids(list(run.trace.tgt_tokens))])
    for step in range(run.n_steps):
        logits, fresh = hf.run_with_trace(tiny, src_ids, decoder_ids[:, :step + 1])
        torch.testing.assert_close(run.step(step)["decoder.layers.0.self_attn.weights"],
                                   fresh["decoder.layers.0.self_attn.weights"])
        chosen = tiny.tokenizer.convert_ids_to_tokens(int(logits[0, -1].argmax()))
        assert chosen == run.output_tokens[step]  # greedy: each step's most likely token is the next one


@needs_transformers
def test_embeddings_sum_to_what_enters_the_first_layer(tiny):
    trace = hf.run_text(tiny, "a small dog", "un petit chien").trace
    for side in ("src_embed", "tgt_embed"):
        token, out = trace[f"{side}.token"], trace[f"{side}.out"]
        if tiny.family == "bart":  # a LayerNorm on the sum (embed_norm)
            summed = token + trace[f"{side}.position"]
            torch.testing.assert_close(out, torch.nn.functional.layer_norm(summed, summed.shape[-1:]), atol=1e-4,
                                       rtol=1e-4)  # freshly initialised: weight 1, bias 0
        elif tiny.family == "t5":
            torch.testing.assert_close(out, token)
        else:
            torch.testing.assert_close(out, token + trace[f"{side}.position"])


@needs_transformers
@pytest.mark.parametrize("text, message", [("", "empty"), ("the cat " * 80, "at most")])
def test_bad_text_is_a_sentence(tiny, text, message):
    with pytest.raises(ValueError, match=message):
        hf.run_text(tiny, text)


@needs_transformers
def test_one_head_step_by_step_is_checked_against_the_trace(tiny):
    run = hf.run_text(tiny, "the dog sees a cat", "le chien voit un chat")
    walk = hf.head_walkthrough(tiny, run.trace, "cross", 1, 2)
    recorded = run.trace["decoder.layers.1.cross_attn.weights"][0, 2].numpy()
    assert walk.weights.shape == recorded.shape and abs(walk.weights - recorded).max() < 1e-5
    assert walk.scale == (1.0 if tiny.family == "t5" else tiny.config.d_head ** 0.5) and walk.position_bias is None
    walk = hf.head_walkthrough(tiny, run.trace, "decoder_self", 0, 1)
    assert not walk.weights[0, 1:].any()  # the first query sees only itself
    encoder = hf.head_walkthrough(tiny, run.trace, "encoder_self", 1, 2)
    if tiny.family == "t5":  # its learned relative bias, as the model's own attention module computes it
        length = len(run.trace.src_tokens)
        own = tiny.model.encoder.block[0].layer[0].SelfAttention.compute_bias(length, length)[0, 2].detach()
        assert encoder.position_bias.shape == (length, length)
        assert abs(encoder.position_bias - own.numpy()).max() < 1e-6 and own.std() > 0
        assert abs(encoder.scores - (encoder.qk + encoder.position_bias)).max() < 1e-5
    else:
        assert encoder.position_bias is None and walk.position_bias is None
    with pytest.raises(ValueError, match="head"):
        hf.head_walkthrough(tiny, run.trace, "cross", 0, tiny.config.n_heads)


@needs_transformers
def test_a_cells_numbers_divide_as_the_model_does_and_add_t5s_bias(tiny):
    from transformer_viz.analysis.walkthrough import cell_numbers

    trace = hf.run_text(tiny, "the dog sees a cat").trace
    numbers = cell_numbers(trace, "encoder_self", 0, 1, 2, 0)
    assert numbers.score == pytest.approx(numbers.recorded_score, abs=1e-5)
    if tiny.family == "t5":
        length = len(trace.src_tokens)
        own = tiny.model.encoder.block[0].layer[0].SelfAttention.compute_bias(length, length)[0, 1, 2, 0].item()
        assert numbers.scale == 1.0 and numbers.position_bias == pytest.approx(own, abs=1e-5)
        assert cell_numbers(trace, "cross", 0, 1, 0, 0).position_bias is None
    else:
        assert numbers.scale == tiny.config.d_head ** 0.5 and numbers.position_bias is None


@needs_transformers
def test_the_logit_lens_ends_with_the_models_own_prediction(tiny):
    trace = hf.run_text(tiny, "a small dog runs home").trace
    lens = hf.logit_lens(tiny, trace)
    assert lens.token_ids.shape == (tiny.config.n_decoder_layers + 1, len(trace.tgt_tokens))
    assert (lens.token_ids[-1] == trace["logits"][0].argmax(-1).numpy()).all()
    assert lens.top_tokens[-1] == tuple(tiny.tokenizer.convert_ids_to_tokens(lens.token_ids[-1].tolist()))


@needs_transformers
def test_parameter_counts_use_the_toy_models_blocks(tiny):
    counts = hf.parameter_counts(tiny)
    assert counts["total"] == sum(p.numel() for p in tiny.model.parameters())
    layers = [f"{stack}.layers.{i}" for stack in ("encoder", "decoder") for i in range(2)]
    assert all(counts[layer] > 0 for layer in layers)
    assert counts["decoder.layers.0"] == sum(counts[f"decoder.layers.0.{block}"] for block in (
        "self_attn", "cross_attn", "ffn", "norm1", "norm2", "norm3"))
    assert counts["src_embed"] > 0


def _random_config(rng):
    """A small random config of one family traced here, with every switch that changes its parameter count."""
    from transformers import BartConfig, MarianConfig, MT5Config, T5Config, UMT5Config

    family, tie = rng.choice(["t5", "mt5", "umt5", "bart", "marian"]), rng.choice([True, False])
    if family in ("t5", "mt5", "umt5"):
        kind = {"t5": T5Config, "mt5": MT5Config, "umt5": UMT5Config}[family]
        return kind(vocab_size=rng.randint(5, 50), d_model=rng.randint(2, 12), d_kv=rng.randint(1, 5),
                    d_ff=rng.randint(1, 9), num_layers=rng.randint(1, 3), num_decoder_layers=rng.randint(1, 3),
                    num_heads=rng.randint(1, 4), relative_attention_num_buckets=rng.randint(1, 40),
                    feed_forward_proj=rng.choice(["relu", "gated-gelu"]), tie_word_embeddings=tie)
    heads, vocab = rng.randint(1, 3), rng.randint(5, 40)
    shape = dict(vocab_size=vocab, d_model=heads * rng.randint(1, 4), encoder_layers=rng.randint(1, 3),
                 decoder_layers=rng.randint(1, 3), encoder_attention_heads=heads, decoder_attention_heads=heads,
                 encoder_ffn_dim=rng.randint(1, 9), decoder_ffn_dim=rng.randint(1, 9),
                 max_position_embeddings=rng.randint(1, 20), pad_token_id=0, tie_word_embeddings=tie,
                 decoder_start_token_id=0)
    if family == "bart":
        return BartConfig(**shape)
    share = rng.choice([True, False])
    return MarianConfig(decoder_vocab_size=vocab if share else rng.randint(5, 40),
                        share_encoder_decoder_embeddings=share, **shape)


@needs_transformers
def test_parameters_counted_from_the_config_are_what_transformers_builds():
    """hf_limits counts without building; on 60 random small configs of every family (tied tables or not, gated
    FFNs, UMT5's per-layer biases, Marian's own target vocabulary) it matches the built model's parameters."""
    import random

    from transformers import AutoModelForSeq2SeqLM

    from transformer_viz.weights.hf_limits import parameter_count

    rng = random.Random(20)
    for _ in range(60):
        config = _random_config(rng)
        with torch.device("meta"):
            built = sum(p.numel() for p in AutoModelForSeq2SeqLM.from_config(config).parameters())
        assert parameter_count(config) == built, config


@needs_transformers
def test_a_model_of_exactly_the_parameter_cap_loads(tiny):
    parameters = sum(p.numel() for p in tiny.model.parameters())
    assert hf.load(tiny.config.name, max_parameters=parameters).config == tiny.config
    with pytest.raises(ValueError, match=f"has {parameters:,} parameters"):
        hf.load(tiny.config.name, max_parameters=parameters - 1)


def test_a_text_the_tokenizer_turns_into_nothing_is_refused_with_a_sentence():
    from types import SimpleNamespace

    from transformer_viz.weights.hf import encode

    silent = SimpleNamespace(tokenizer=lambda text: {"input_ids": []})  # a tokenizer that drops every character
    with pytest.raises(ValueError, match="empty"):
        encode(silent, "\u200b", 32)
