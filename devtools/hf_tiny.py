"""Tiny Hugging Face models of each family, built offline: a config with random weights and a tokenizer trained on a
few sentences (SentencePiece unigram; GPT-2 and Qwen2: byte-level BPE). Encoder-decoders (Marian, BART, T5) and
decoder-only models (GPT-2, and the Llama layout: Llama, Qwen2, Mistral, with fewer key/value heads than query
heads). For tests and benches; nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "the cat sat on the mat", "the dog sees a cat", "a small dog runs home", "the teacher reads a book",
    "students learn how attention works", "le chat est sur le tapis", "le chien voit un chat",
    "un petit chien rentre", "the model translates a sentence", "attention is all you need",
] * 4
SPECIALS = ["<pad>", "</s>", "<unk>", "<s>"]  # pad 0, eos 1, unk 2, bos 3
SIZES = {"d_model": 32, "heads": 4, "layers": 2, "d_ff": 64}
CAUSAL_FAMILIES = ("gpt2", "llama", "qwen2", "mistral")
KV_HEADS = 2  # the Llama layout's key/value heads: each serves two query heads (grouped-query attention)


def tiny_tokenizer(family: str):
    """A fast tokenizer with SentencePiece pieces ("▁the"), ending each text with </s> (BART: <s> … </s>; the
    Llama layout: <s> … without an end)."""
    from tokenizers import SentencePieceUnigramTokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    unigram = SentencePieceUnigramTokenizer()
    unigram.train_from_iterator(CORPUS, vocab_size=120, special_tokens=SPECIALS, unk_token="<unk>")
    single = {"bart": "<s> $A </s>", "llama": "<s> $A"}.get(family, "$A </s>")  # Llama: <s> first, no end
    unigram.post_processor = TemplateProcessing(single=single, special_tokens=[
        ("<s>", unigram.token_to_id("<s>")), ("</s>", unigram.token_to_id("</s>"))])
    return PreTrainedTokenizerFast(tokenizer_object=unigram, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   bos_token="<s>")


def tiny_model(family: str, vocab_size: int):
    """A randomly initialised `family` encoder-decoder of SIZES, eager attention, in eval mode."""
    import torch
    from transformers import (
        BartConfig,
        BartForConditionalGeneration,
        MarianConfig,
        MarianMTModel,
        T5Config,
        T5ForConditionalGeneration,
    )

    torch.manual_seed(0)
    d, heads, layers, d_ff = SIZES["d_model"], SIZES["heads"], SIZES["layers"], SIZES["d_ff"]
    ids = {"pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 3}
    if family == "t5":
        config = T5Config(vocab_size=vocab_size, d_model=d, d_kv=d // heads, d_ff=d_ff, num_layers=layers,
                          num_decoder_layers=layers, num_heads=heads, decoder_start_token_id=0, **ids)
        model = T5ForConditionalGeneration(config)
    else:
        shape = dict(vocab_size=vocab_size, d_model=d, encoder_layers=layers, decoder_layers=layers,
                     encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=d_ff,
                     decoder_ffn_dim=d_ff, max_position_embeddings=64, **ids)
        if family == "marian":
            model = MarianMTModel(MarianConfig(decoder_start_token_id=0, decoder_vocab_size=vocab_size, **shape))
        else:
            model = BartForConditionalGeneration(BartConfig(decoder_start_token_id=1, forced_eos_token_id=1,
                                                            **shape))
    model.config._attn_implementation = "eager"
    return model.eval()


def tiny_gpt2_tokenizer():
    """GPT-2's kind of tokenizer: byte-level BPE ("Ġthe"), <|endoftext|> (id 0) its only special token, nothing
    added to a text."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   unk_token="<|endoftext|>")


def tiny_causal_model(family: str, vocab_size: int, **options):
    """A randomly initialised decoder-only `family` model of SIZES (the Llama layout with KV_HEADS key/value heads,
    an untied readout), eager attention, in eval mode; `options` go to its config. Weights are drawn wider than
    transformers' 0.02 so that attention is far from uniform and a wrong trace shows."""
    import torch
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        MistralConfig,
        MistralForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    torch.manual_seed(0)
    d, heads, layers, d_ff = SIZES["d_model"], SIZES["heads"], SIZES["layers"], SIZES["d_ff"]
    if family == "gpt2":
        shape = dict(vocab_size=vocab_size, n_embd=d, n_head=heads, n_layer=layers, n_inner=d_ff, n_positions=64,
                     bos_token_id=0, eos_token_id=0, initializer_range=0.3)
        model = GPT2LMHeadModel(GPT2Config(**{**shape, **options}))
    else:
        kind, build = {"llama": (LlamaConfig, LlamaForCausalLM), "qwen2": (Qwen2Config, Qwen2ForCausalLM),
                       "mistral": (MistralConfig, MistralForCausalLM)}[family]
        shape = dict(vocab_size=vocab_size, hidden_size=d, intermediate_size=d_ff, num_hidden_layers=layers,
                     num_attention_heads=heads, num_key_value_heads=KV_HEADS, head_dim=d // heads,
                     max_position_embeddings=64, tie_word_embeddings=False, initializer_range=0.3,
                     pad_token_id=0, eos_token_id=1, bos_token_id=3)
        model = build(kind(**{**shape, **options}))
    model.config._attn_implementation = "eager"
    return model.eval()


def save_tiny(family: str, folder: Path, **options) -> Path:
    """Save a tiny `family` model and its tokenizer into `folder` (a Hugging Face model folder); return it.
    `options` go to a decoder-only model's config."""
    if family in CAUSAL_FAMILIES:  # GPT-2 and Qwen2 read bytes; Llama and Mistral SentencePiece pieces
        tokenizer = tiny_gpt2_tokenizer() if family in ("gpt2", "qwen2") else tiny_tokenizer("llama")
        ids = {f"{role}_token_id": getattr(tokenizer, f"{role}_token_id") for role in ("pad", "eos", "bos")}
        model = tiny_causal_model(family, len(tokenizer), **{**ids, **options})
    else:
        tokenizer = tiny_tokenizer(family)
        model = tiny_model(family, len(tokenizer))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
