"""Hugging Face decoder-only models traced into the toy decoder-only model's names: tiny GPT-2, Llama, Qwen2 and
Mistral models built offline (the Llama layout with 2 key/value heads for 4 query heads)."""

import json
import sys

import pytest
import torch

from transformer_viz.weights import hf, hf_causal

missing = hf.missing_reason()
needs_transformers = pytest.mark.skipif(missing is not None, reason=f"{missing}")
pytestmark = pytest.mark.hf
FAMILIES = ["gpt2", "llama", "qwen2", "mistral"]
PROMPT = "the cat sat on the mat"


def _save(family, folder, **options):
    if missing is not None:
        pytest.skip(missing)
    from devtools.hf_tiny import save_tiny

    return str(save_tiny(family, folder, **options))


@pytest.fixture(scope="module", params=FAMILIES)
def tiny(request, tmp_path_factory):
    return hf_causal.load(_save(request.param, tmp_path_factory.mktemp(request.param)))


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def gpt2_or_llama(request, tmp_path_factory):
    return hf_causal.load(_save(request.param, tmp_path_factory.mktemp(request.param)))


def _ids(tiny, text=PROMPT):
    return tiny.tokenizer(text, return_tensors="pt").input_ids  # (1, T)


def _toy_names(positional):
    from transformer_viz.config import ModelConfig
    from transformer_viz.model.decoder_only import DecoderOnlyTransformer

    config = ModelConfig(src_vocab_size=20, tgt_vocab_size=20, architecture="decoder_only", positional=positional)
    return list(DecoderOnlyTransformer(config).run_with_trace(torch.tensor([[1, 5, 6, 7]]))[1])


def test_without_the_extra_loading_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers raises ImportError
    with pytest.raises(ValueError, match=r"pip install '\.\[hf\]'"):
        hf_causal.load("gpt2")


@needs_transformers
def test_another_family_a_gpt2_option_or_too_many_parameters_is_refused_before_weights_are_read(
        tiny, tmp_path, monkeypatch):
    import transformers

    def no_weights(*args, **kwargs):
        raise AssertionError("weights read")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_weights)
    parameters = sum(p.numel() for p in tiny.model.parameters())
    with pytest.raises(ValueError, match=f"has {parameters:,} parameters; this server loads models of at most 1,000"):
        hf_causal.load(tiny.config.name, max_parameters=1000)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bart"}))  # a config, no weights
    with pytest.raises(ValueError, match="type 'bart' are not traced as decoder-only") as refused:
        hf_causal.load(str(tmp_path))
    assert refused.value.key == "hf.causal_family"
    for option, value in (("scale_attn_by_inverse_layer_idx", True), ("scale_attn_weights", False)):
        (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", option: value}))
        with pytest.raises(ValueError, match=f"sets {option} to {value}") as refused:
            hf_causal.load(str(tmp_path))
        assert refused.value.key == "hf.gpt2_option"


def _random_config(rng):
    """A small random config of each family, with every switch that changes its parameter count."""
    from transformers import GPT2Config, LlamaConfig, MistralConfig, Qwen2Config

    family, tie = rng.choice(FAMILIES), rng.choice([True, False])
    if family == "gpt2":
        heads = rng.randint(1, 3)
        return GPT2Config(vocab_size=rng.randint(5, 40), n_embd=heads * rng.randint(1, 4), n_head=heads,
                          n_layer=rng.randint(1, 3), n_positions=rng.randint(1, 20), tie_word_embeddings=tie,
                          n_inner=rng.choice([None, rng.randint(1, 9)]))
    kv, group = rng.randint(1, 2), rng.randint(1, 3)
    shape = dict(vocab_size=rng.randint(5, 40), hidden_size=kv * group * rng.randint(1, 3),
                 num_hidden_layers=rng.randint(1, 3),
                 num_attention_heads=kv * group, num_key_value_heads=kv, head_dim=2 * rng.randint(1, 3),
                 intermediate_size=rng.randint(1, 9), tie_word_embeddings=tie)
    if family == "llama":
        return LlamaConfig(attention_bias=rng.choice([True, False]), mlp_bias=rng.choice([True, False]), **shape)
    return {"qwen2": Qwen2Config, "mistral": MistralConfig}[family](**shape)


@needs_transformers
def test_parameters_counted_from_the_config_are_what_transformers_builds():
    import random

    from transformers import AutoModelForCausalLM

    from transformer_viz.weights.hf_causal_limits import parameter_count

    rng = random.Random(21)
    for _ in range(60):
        config = _random_config(rng)
        with torch.device("meta"):
            built = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
        assert parameter_count(config) == built, config


@needs_transformers
def test_the_names_are_the_toy_decoder_only_models_but_what_the_family_lacks(tiny):
    """GPT-2 records every name of a toy decoder-only model with learned positions, in its order; the Llama layout
    every name of a rotary one but tgt_embed.position (RoPE adds no vector to the embeddings)."""
    ids = _ids(tiny)
    _, trace = hf_causal.run_with_trace(tiny, ids)
    if tiny.family == "gpt2":
        assert list(trace) == _toy_names("learned")
    else:
        assert list(trace) == [n for n in _toy_names("rotary") if n != "tgt_embed.position"]
    config, length = tiny.config, ids.shape[1]
    heads, kv_heads, d_head = config.n_heads, config.n_kv_heads, config.d_head
    for layer in range(config.n_decoder_layers):
        def recorded(leaf, layer=layer):
            return trace[f"decoder.layers.{layer}.self_attn.{leaf}"]
        assert recorded("q").shape == (1, heads, length, d_head)
        assert recorded("k").shape == recorded("v").shape == (1, kv_heads, length, d_head)
        for leaf in ("scores", "masked_scores", "weights"):
            assert recorded(leaf).shape == (1, heads, length, length)
        assert recorded("mask").shape == (1, 1, length, length) and recorded("mask").dtype == torch.bool
        assert trace[f"decoder.layers.{layer}.ffn.hidden"].shape == (1, length, config.d_ff)
    assert trace["logits"].shape == (1, length, config.tgt_vocab_size)
    assert all(torch.isfinite(t).all() for n, t in trace.items() if n.endswith(("weights", "scores", "logits")))


def _hooks(model):
    """How many forward hooks the model's modules hold (transformers keeps some of its own)."""
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def _hooks_after_a_forward(tiny) -> int:
    """`_hooks` once the model has run: transformers installs hooks of its own at a model's first forward."""
    with torch.no_grad():
        tiny.model(_ids(tiny), output_attentions=True, use_cache=False)
    return _hooks(tiny.model)


@needs_transformers
def test_the_weights_are_the_models_own_attentions_under_the_causal_mask(tiny):
    ids, hooks = _ids(tiny), _hooks_after_a_forward(tiny)
    _, trace = hf_causal.run_with_trace(tiny, ids)
    assert _hooks(tiny.model) == hooks
    with torch.no_grad():
        own = tiny.model(ids, output_attentions=True, use_cache=False).attentions
    length = ids.shape[1]
    for layer, expected in enumerate(own):
        weights = trace[f"decoder.layers.{layer}.self_attn.weights"]
        torch.testing.assert_close(weights, expected, atol=1e-5, rtol=1e-4)
        mask = trace[f"decoder.layers.{layer}.self_attn.mask"]
        assert torch.equal(mask[0, 0], torch.ones(length, length, dtype=torch.bool).tril())
        assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()


@needs_transformers
def test_the_logits_and_the_residual_stream_are_the_models_own(tiny):
    ids = _ids(tiny)
    logits, trace = hf_causal.run_with_trace(tiny, ids)
    with torch.no_grad():
        own = tiny.model(ids, output_hidden_states=True, use_cache=False)
    torch.testing.assert_close(logits, own.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(trace["logits"], own.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(trace["tgt_embed.out"], own.hidden_states[0], atol=1e-6, rtol=0)
    torch.testing.assert_close(trace["decoder.out"], own.hidden_states[-1], atol=1e-6, rtol=0)  # after the norm
    torch.testing.assert_close(trace["decoder.layers.0.resid_post"], own.hidden_states[1], atol=1e-6, rtol=0)


def _by_hand(tiny, ids, head):
    """Layer 0's scores of query `head`, from the model's weights alone: (T, T) = q·kᵀ/√d_head, the Llama
    layout's q and k turned by transformers' own apply_rotary_pos_emb, its key head = head // group."""
    model, d_head = tiny.model, tiny.config.d_head
    with torch.no_grad():
        if tiny.family == "gpt2":
            core = model.transformer
            x = core.h[0].ln_1(core.wte(ids) + core.wpe(torch.arange(ids.shape[1])))  # (1, T, d_model)
            packed = x[0] @ core.h[0].attn.c_attn.weight + core.h[0].attn.c_attn.bias  # (T, 3 · d_model)
            q = packed[:, head * d_head:(head + 1) * d_head]  # (T, d_head)
            k = packed[:, tiny.config.d_model + head * d_head:][:, :d_head]  # (T, d_head)
            return q @ k.T / d_head ** 0.5
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        core, kv_head = model.model, head // (tiny.config.n_heads // tiny.config.n_kv_heads)
        attention = core.layers[0].self_attn
        x = core.layers[0].input_layernorm(core.embed_tokens(ids))  # (1, T, d_model)
        q = attention.q_proj(x)[..., head * d_head:(head + 1) * d_head][:, None]  # (1, 1, T, d_head)
        k = attention.k_proj(x)[..., kv_head * d_head:(kv_head + 1) * d_head][:, None]  # (1, 1, T, d_head)
        cos, sin = core.rotary_emb(x, torch.arange(ids.shape[1])[None])  # (1, T, d_head) each
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return (q @ k.transpose(-2, -1) / d_head ** 0.5)[0, 0]


@needs_transformers
def test_every_heads_scores_are_q_dot_k_worked_out_from_the_weights(tiny):
    """Independent of the hooks: GPT-2's packed c_attn split by hand, RoPE applied by transformers' function; the
    Llama layout's query heads 0 and 1 read key head 0, heads 2 and 3 key head 1."""
    ids = _ids(tiny)
    _, trace = hf_causal.run_with_trace(tiny, ids)
    for head in range(tiny.config.n_heads):
        torch.testing.assert_close(trace["decoder.layers.0.self_attn.scores"][0, head], _by_hand(tiny, ids, head),
                                   atol=1e-5, rtol=1e-5)


@needs_transformers
def test_grouped_query_heads_share_their_key_value_head(tiny):
    config = tiny.config
    expected = (0, 1, 2, 3) if tiny.family == "gpt2" else (0, 0, 1, 1)
    assert config.kv_head_of_query_head == expected == tuple(h // (config.n_heads // config.n_kv_heads)
                                                             for h in range(config.n_heads))
    _, trace = hf_causal.run_with_trace(tiny, _ids(tiny))
    leaf = "k" if tiny.family == "gpt2" else "k_rot"
    q = trace[f"decoder.layers.1.self_attn.{'q' if tiny.family == 'gpt2' else 'q_rot'}"][0]  # (heads, T, d_head)
    k = trace[f"decoder.layers.1.self_attn.{leaf}"][0]  # (kv heads, T, d_head)
    for head, kv_head in enumerate(config.kv_head_of_query_head):
        torch.testing.assert_close(trace["decoder.layers.1.self_attn.scores"][0, head],
                                   q[head] @ k[kv_head].T / config.d_head ** 0.5)


@needs_transformers
def test_rotary_q_rot_and_k_rot_are_q_and_k_turned_by_position(tiny):
    """The Llama layout: position 0 is not turned, and a turn keeps each vector's length; GPT-2 has no turn and its
    position vectors are the rows of its learned table."""
    _, trace = hf_causal.run_with_trace(tiny, _ids(tiny))
    prefix = "decoder.layers.1.self_attn"
    if tiny.family == "gpt2":
        assert f"{prefix}.q_rot" not in trace
        length = trace["tgt_embed.token"].shape[1]
        torch.testing.assert_close(trace["tgt_embed.position"], tiny.model.transformer.wpe.weight[:length].detach())
        torch.testing.assert_close(trace["tgt_embed.token"] + trace["tgt_embed.position"], trace["tgt_embed.out"])
        return
    for leaf in ("q", "k"):
        plain, turned = trace[f"{prefix}.{leaf}"], trace[f"{prefix}.{leaf}_rot"]
        torch.testing.assert_close(turned[:, :, 0], plain[:, :, 0])
        torch.testing.assert_close(turned.norm(dim=-1), plain.norm(dim=-1))
        assert not torch.allclose(turned[:, :, 1:], plain[:, :, 1:], atol=1e-3)
    torch.testing.assert_close(trace["tgt_embed.token"], trace["tgt_embed.out"])


@needs_transformers
def test_ffn_hidden_is_what_enters_the_output_projection(tiny):
    """GPT-2: GELU(x W1 + b1); the Llama layout: SwiGLU's act(x W_gate) * (x W_up). Either, through the output
    projection and added to resid_mid, gives resid_post."""
    _, trace = hf_causal.run_with_trace(tiny, _ids(tiny))
    mid, hidden = trace["decoder.layers.1.resid_mid"], trace["decoder.layers.1.ffn.hidden"]
    with torch.no_grad():
        if tiny.family == "gpt2":
            layer = tiny.model.transformer.h[1]
            expected = layer.mlp.act(layer.mlp.c_fc(layer.ln_2(mid)))
            output = layer.mlp.c_proj(hidden)
        else:
            layer, mlp = tiny.model.model.layers[1], tiny.model.model.layers[1].mlp
            x = layer.post_attention_layernorm(mid)
            expected = mlp.act_fn(mlp.gate_proj(x)) * mlp.up_proj(x)
            output = mlp.down_proj(hidden)
    torch.testing.assert_close(hidden, expected)
    torch.testing.assert_close(mid + output, trace["decoder.layers.1.resid_post"])
    torch.testing.assert_close(trace["decoder.layers.0.resid_post"] + trace["decoder.layers.1.self_attn.out"], mid)


@needs_transformers
@pytest.mark.parametrize("side", ["left", "right"])
def test_a_padded_row_computes_on_its_real_tokens_what_it_computes_alone(gpt2_or_llama, side):
    tiny = gpt2_or_llama
    long, short = _ids(tiny, "the teacher reads a book"), _ids(tiny, "a small dog")
    extra = long.shape[1] - short.shape[1]
    pad = (extra, 0) if side == "left" else (0, extra)
    batch = torch.cat([long, torch.nn.functional.pad(short, pad, value=tiny.config.pad_id)])  # (2, T)
    real = torch.cat([torch.ones_like(long), torch.nn.functional.pad(torch.ones_like(short), pad, value=0)])
    logits, trace = hf_causal.run_with_trace(tiny, batch, real)
    alone_logits, alone = hf_causal.run_with_trace(tiny, short)
    kept = real[1].bool()
    for layer in range(tiny.config.n_decoder_layers):
        weights = trace[f"decoder.layers.{layer}.self_attn.weights"][1][:, kept][:, :, kept]
        torch.testing.assert_close(weights, alone[f"decoder.layers.{layer}.self_attn.weights"][0], atol=1e-5,
                                   rtol=1e-4)
        assert not trace[f"decoder.layers.{layer}.self_attn.mask"][1, 0][:, ~kept].any()  # padding is never read
    torch.testing.assert_close(logits[1, kept], alone_logits[0], atol=1e-4, rtol=1e-4)


@needs_transformers
def test_greedy_text_is_what_generate_chooses_token_for_token(tiny):
    ids = _ids(tiny, "the dog sees")
    run = hf_causal.run_text(tiny, "the dog sees", max_new_tokens=6)
    expected = tiny.model.generate(ids, do_sample=False, max_new_tokens=6, pad_token_id=tiny.config.pad_id)
    assert run.prompt_len == ids.shape[1] and run.n_steps == expected.shape[1] - ids.shape[1]
    assert run.output_tokens == tuple(tiny.tokenizer.convert_ids_to_tokens(expected[0, ids.shape[1]:].tolist()))
    assert run.output_text == tiny.tokenizer.decode(expected[0, ids.shape[1]:], skip_special_tokens=True)
    assert run.trace.tgt_tokens == tuple(tiny.tokenizer.convert_ids_to_tokens(expected[0, :-1].tolist()))
    assert run.trace["logits"].shape[1] == expected.shape[1] - 1  # the last step read all but the last token


@needs_transformers
def test_greedy_decoding_stops_at_the_end_token(tiny, monkeypatch):
    """The generation config's end token (made a token greedy picks first at step k) ends the run there, as
    generate does."""
    prompt = _ids(tiny, "the dog sees")
    chosen = hf_causal.greedy(tiny, prompt, 6)[0, prompt.shape[1]:].tolist()
    k = next(k for k in range(1, len(chosen)) if chosen[k] not in chosen[:k])
    monkeypatch.setattr(tiny.model.generation_config, "eos_token_id", chosen[k])
    run = hf_causal.run_text(tiny, "the dog sees", max_new_tokens=10)
    expected = tiny.model.generate(prompt, do_sample=False, max_new_tokens=10, pad_token_id=tiny.config.pad_id)
    assert run.n_steps == k + 1 == expected.shape[1] - run.prompt_len
    assert tiny.tokenizer.convert_tokens_to_ids(run.output_tokens[-1]) == chosen[k]
    assert run.output_text == tiny.tokenizer.decode(expected[0, run.prompt_len:-1], skip_special_tokens=True)


@needs_transformers
def test_each_greedy_step_is_a_pass_over_the_prompt_and_the_tokens_so_far(tiny):
    run = hf_causal.run_text(tiny, "the dog sees", max_new_tokens=5)
    ids = torch.tensor([tiny.tokenizer.convert_tokens_to_ids(list(run.trace.tgt_tokens))])  # (1, P + n - 1)
    for k in range(run.n_steps):
        logits, fresh = hf_causal.run_with_trace(tiny, ids[:, :run.prompt_len + k])
        step = run.step(k)
        assert list(step) == list(fresh)
        for trace_name, tensor in fresh.items():
            torch.testing.assert_close(step[trace_name], tensor, atol=1e-5, rtol=1e-4, msg=trace_name)
        chosen = tiny.tokenizer.convert_ids_to_tokens(int(logits[0, -1].argmax()))
        assert chosen == run.output_tokens[k]
    with pytest.raises(ValueError, match="does not exist"):
        run.step(run.n_steps)


@needs_transformers
@pytest.mark.parametrize("mutation", ["no causal mask", "no rotation"])
def test_a_trace_that_disagrees_with_the_model_raises_and_leaves_no_hooks(gpt2_or_llama, monkeypatch, mutation):
    tiny = gpt2_or_llama
    if mutation == "no causal mask":
        monkeypatch.setattr(hf_causal, "attention_mask", lambda hf, real, layer: torch.ones(1, 1, 1, 1).bool())
    elif tiny.family == "gpt2":
        pytest.skip("GPT-2 turns nothing")
    else:
        monkeypatch.setattr(hf_causal, "_rotate", lambda x, cos, sin: x)
    hooks = _hooks_after_a_forward(tiny)
    with pytest.raises(RuntimeError, match="differ from the model's own"):
        hf_causal.run_with_trace(tiny, _ids(tiny))
    assert _hooks(tiny.model) == hooks


@needs_transformers
def test_mistrals_sliding_window_is_part_of_the_mask(tmp_path):
    tiny = hf_causal.load(_save("mistral", tmp_path, sliding_window=3))
    _, trace = hf_causal.run_with_trace(tiny, _ids(tiny))  # checked against the model's own weights
    mask = trace["decoder.layers.0.self_attn.mask"][0, 0]
    query, key = torch.meshgrid(torch.arange(len(mask)), torch.arange(len(mask)), indexing="ij")
    assert torch.equal(mask, (key <= query) & (query - key < 3))


@needs_transformers
def test_gpt2s_reordered_upcast_attention_traces_the_same(tmp_path):
    """reorder_and_upcast_attn computes the same scores in float32: traced and checked, not refused."""
    tiny = hf_causal.load(_save("gpt2", tmp_path, reorder_and_upcast_attn=True))
    _, trace = hf_causal.run_with_trace(tiny, _ids(tiny))
    assert trace["decoder.layers.1.self_attn.weights"].shape[1] == tiny.config.n_heads


@needs_transformers
@pytest.mark.parametrize("prompt, message", [("", "empty"), ("the cat " * 80, "at most")])
def test_a_bad_prompt_is_a_sentence(gpt2_or_llama, prompt, message):
    with pytest.raises(ValueError, match=message):
        hf_causal.run_text(gpt2_or_llama, prompt)
