"""The instrumented Transformer: each part of the paper as its own small module."""

from transformer_viz.model.attention import MultiHeadAttention, scaled_dot_product_attention
from transformer_viz.model.decoder_only import DecoderOnlyTransformer, build_model
from transformer_viz.model.embeddings import (
    Embeddings,
    PositionalEncoding,
    encoding_tables,
    learned_init_encoding,
    seed002_buggy_encoding,
    sinusoidal_concat_encoding,
    sinusoidal_encoding,
)
from transformer_viz.model.feed_forward import FeedForward
from transformer_viz.model.hooks import Dropout, dropout_from
from transformer_viz.model.layers import Decoder, DecoderLayer, Encoder, EncoderLayer
from transformer_viz.model.masks import decoder_self_mask, look_ahead_mask, padding_mask
from transformer_viz.model.summary import block_shapes, parameter_counts
from transformer_viz.model.transformer import Transformer, init_parameters

__all__ = [
    "Decoder", "DecoderLayer", "DecoderOnlyTransformer", "Dropout", "Embeddings", "Encoder", "EncoderLayer",
    "FeedForward", "MultiHeadAttention", "PositionalEncoding", "Transformer", "block_shapes", "build_model",
    "decoder_self_mask", "dropout_from", "encoding_tables",
    "init_parameters", "learned_init_encoding", "look_ahead_mask", "padding_mask", "parameter_counts",
    "scaled_dot_product_attention", "seed002_buggy_encoding", "sinusoidal_concat_encoding", "sinusoidal_encoding",
]
