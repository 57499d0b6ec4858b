"""Tiny Hugging Face encoder-decoders of each family, built offline: a config with random weights and a SentencePiece
(unigram) tokenizer trained on a few sentences. For tests and benches; nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "the cat sat on the mat", "the dog sees a cat", "a small dog runs home", "the teacher reads a book",
    "students learn how attention works", "le chat est sur le tapis", "le chien voit un chat",
    "un petit chien rentre", "the model translates a sentence", "attention is all you need",
] * 4
SPECIALS = ["<pad>", "</s>", "<unk>", "<s>"]  # pad 0, eos 1, unk 2, bos 3
SIZES = {"d_model": 32, "heads": 4, "layers": 2, "d_ff": 64}


def tiny_tokenizer(family: str):
    """A fast tokenizer with SentencePiece pieces ("▁the"), ending each text with </s> (BART: <s> … </s>)."""
    from tokenizers import SentencePieceUnigramTokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    unigram = SentencePieceUnigramTokenizer()
    unigram.train_from_iterator(CORPUS, vocab_size=120, special_tokens=SPECIALS, unk_token="<unk>")
    single = "<s> $A </s>" if family == "bart" else "$A </s>"
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


def save_tiny(family: str, folder: Path) -> Path:
    """Save a tiny `family` model and its tokenizer into `folder` (a Hugging Face model folder); return it."""
    tokenizer = tiny_tokenizer(family)
    model = tiny_model(family, len(tokenizer))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
