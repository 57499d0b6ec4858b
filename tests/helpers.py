"""Small models and inputs shared by the tests."""

import torch

from transformer_viz import ModelConfig, Transformer


def make_model(**overrides) -> Transformer:
    settings = dict(src_vocab_size=20, tgt_vocab_size=22, d_model=16, n_heads=4, n_encoder_layers=2,
                    n_decoder_layers=2, d_ff=32, max_len=24)
    settings.update(overrides)
    return Transformer(ModelConfig(**settings)).eval()


def random_ids(batch: int, length: int, vocab: int, pad_tail: list[int] | None = None) -> torch.Tensor:
    """Random non-pad ids; row b ends with pad_tail[b] pads (pad id 0)."""
    ids = torch.randint(1, vocab, (batch, length))
    for row, n_pad in enumerate(pad_tail or []):
        if n_pad:
            ids[row, length - n_pad:] = 0
    return ids
