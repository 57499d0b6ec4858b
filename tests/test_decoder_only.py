"""The decoder-only Transformer (GPT's form) against torch.nn: its layers are TransformerEncoderLayers under a
causal mask, the whole model a TransformerEncoder between the embeddings and the output projection."""

import pytest
import torch
from torch import nn

from tests.test_layers import D_FF, D_MODEL, N_HEADS, copy_attention, copy_common, randomise
from transformer_viz import ModelConfig, Transformer
from transformer_viz.model import DecoderOnlyTransformer, look_ahead_mask
from transformer_viz.trace.names import attention_name

VOCAB, PAD, EOS = 11, 0, 2


def model(norm_first: bool = True, layers: int = 2, seed: int = 0) -> DecoderOnlyTransformer:
    config = ModelConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF,
                         n_decoder_layers=layers, norm_first=norm_first, architecture="decoder_only")
    built = DecoderOnlyTransformer(config, generator=torch.Generator().manual_seed(seed)).eval()
    randomise(built)
    return built


def torch_layer(ours, norm_first: bool) -> nn.TransformerEncoderLayer:
    # train() with dropout 0 is deterministic and keeps torch off its fused fast path.
    ref = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, activation="relu", batch_first=True,
                                     norm_first=norm_first).train()
    with torch.no_grad():
        copy_attention(ours.self_attn, ref.self_attn)
        copy_common(ours, ref)
    return ref


IDS = torch.tensor([[1, 5, 6, 7, 8, 3], [1, 9, 4, PAD, PAD, PAD]])  # (batch, length): the second row padded


@pytest.mark.parametrize("norm_first", [True, False])
def test_a_layer_equals_torchs_encoder_layer_under_a_causal_mask(norm_first):
    ours = model(norm_first)
    layer = ours.decoder.layers[0]
    ref = torch_layer(layer, norm_first)
    x = torch.randn(2, 6, D_MODEL)
    causal = ~look_ahead_mask(6)  # torch: True = blocked
    with torch.no_grad():
        got = layer(x, ((IDS != PAD)[:, None, None, :]) & look_ahead_mask(6))
        want = ref(x, src_mask=causal, src_key_padding_mask=IDS == PAD)
    real = IDS != PAD  # padded queries see nothing in ours and are not compared
    assert torch.allclose(got[real], want[real], atol=1e-5)


@pytest.mark.parametrize("norm_first", [True, False])
def test_the_model_is_torchs_encoder_stack_between_its_embeddings_and_output_projection(norm_first):
    ours = model(norm_first, layers=3)
    stack = nn.ModuleList(torch_layer(layer, norm_first) for layer in ours.decoder.layers)
    with torch.no_grad():
        hidden = ours.tgt_embed(IDS)  # (batch, length, d_model)
        for ref in stack:
            hidden = ref(hidden, src_mask=~look_ahead_mask(6), src_key_padding_mask=IDS == PAD)
        want = ours.output_proj(ours.decoder.norm(hidden))  # pre-LN's final norm (post-LN: the identity)
        got = ours(IDS)
    real = IDS != PAD
    assert torch.allclose(got[real], want[real], atol=1e-4)


def test_no_position_reads_a_later_token():
    ours, changed = model(), IDS[:1].clone()
    changed[0, 3] = 10
    with torch.no_grad():
        before, after = ours(IDS[:1]), ours(changed)
    assert torch.equal(before[0, :3], after[0, :3]) and not torch.allclose(before[0, 3:], after[0, 3:])


def test_padding_after_a_sequence_changes_none_of_its_logits():
    ours = model()
    with torch.no_grad():
        alone, padded = ours(IDS[1:, :3]), ours(IDS[1:])
    assert torch.allclose(alone[0], padded[0, :3], atol=1e-5)


def test_its_trace_has_the_decoders_names_and_its_weights_never_look_ahead():
    ours = model()
    logits, trace = ours.run_with_trace(IDS)
    assert torch.equal(logits, ours(IDS))
    weights = trace[attention_name("decoder_self", 1, "weights")]  # (batch, heads, length, length)
    assert weights.shape == (2, N_HEADS, 6, 6)
    assert torch.all(weights.triu(diagonal=1) == 0)
    assert torch.allclose(weights[0].sum(-1), torch.ones(N_HEADS, 6))
    assert not [n for n in trace.tensors if n.startswith(("encoder", "src_embed")) or "cross_attn" in n]
    assert {"tgt_embed.out", "decoder.out", "logits"} <= set(trace.tensors)


def test_greedy_generation_writes_the_most_probable_token_after_each_prefix():
    ours = model(seed=3)
    ids, steps = ours.generate(IDS[:1, :2], max_new_tokens=4, eos_id=EOS)
    assert torch.equal(ids[:, :2], IDS[:1, :2]) and len(steps) == ids.shape[1] - 2
    for k in range(2, ids.shape[1]):
        with torch.no_grad():
            assert int(ours(ids[:, :k])[0, -1].argmax()) == int(ids[0, k])


def test_each_architecture_builds_its_own_model_and_says_so_otherwise():
    decoder_only = model().config
    with pytest.raises(ValueError, match="DecoderOnlyTransformer"):
        Transformer(decoder_only)
    with pytest.raises(ValueError, match='architecture="decoder_only"'):
        DecoderOnlyTransformer(ModelConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB))
    with pytest.raises(ValueError, match="encoder_decoder, decoder_only"):
        ModelConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, architecture="gpt")
    assert ModelConfig.from_dict(decoder_only.to_dict()) == decoder_only  # a checkpoint's metadata keeps it


def test_tied_embeddings_are_one_matrix_through_training_saving_and_loading(tmp_path):
    from transformer_viz.data.tasks import get_task
    from transformer_viz.data.tasks.lm import lm_config
    from transformer_viz.train.loop import train
    from transformer_viz.weights.pretrained import load_pretrained, save_pretrained

    task = get_task("copy")
    untied = DecoderOnlyTransformer(lm_config(task), generator=torch.Generator().manual_seed(0))
    model = DecoderOnlyTransformer(lm_config(task, tie_embeddings=True), generator=torch.Generator().manual_seed(0))
    assert model.output_proj.weight is model.tgt_embed.token_table.weight
    vocab, d_model = model.output_proj.weight.shape
    assert sum(p.numel() for p in untied.parameters()) - sum(p.numel() for p in model.parameters()) == vocab * d_model
    train(model, task, steps=5, batch_size=8)
    assert model.output_proj.weight is model.tgt_embed.token_table.weight  # still one matrix after the updates
    save_pretrained(model, task, tmp_path, name="tied")
    loaded = load_pretrained("tied", tmp_path).model
    assert loaded.output_proj.weight is loaded.tgt_embed.token_table.weight
    assert torch.allclose(loaded.output_proj.weight, model.output_proj.weight.half().float())
    with pytest.raises(ValueError, match="decoder-only"):
        ModelConfig(src_vocab_size=8, tgt_vocab_size=8, tie_embeddings=True)
