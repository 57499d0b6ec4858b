"""The form of a model, as its trace shows it: which token streams and which attentions it has.

Two forms: the paper's encoder-decoder (a source read by the encoder, a target written by the decoder, which
reads the source through cross-attention) and GPT's decoder-only model (one stream: the prompt and then its
answer, read by masked self-attention alone). Every question a view asks of the form (which kinds of attention
there are, which one aligns the output with the input, which tokens are the input, which stacks and embedding
tables there are, which sublayers a layer has) is answered here, once; nothing above branches on the form.
What a *model* does with its form (running text, generating, its vocabularies) is `analysis/architecture.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer_viz.trace.names import ATTENTION_KINDS


@dataclass(frozen=True)
class Form:
    """What a model of one architecture has, in the trace's names."""

    name: str  # "encoder_decoder" or "decoder_only", as ModelConfig.architecture
    kinds: tuple[str, ...]  # the attention kinds it has, in ATTENTION_KINDS's order
    stacks: tuple[str, ...]  # the layer stacks it has
    sides: tuple[str, ...]  # its embedding tables: "src" and "tgt", or its one stream's "tgt"
    aligning_kind: str  # the attention whose rows align each output token with the input it comes from
    side_names: dict[str, str]  # an embedding side -> its name in the catalogs ("src", "tgt" or one "stream")
    side_labels: dict[str, str]  # an embedding side -> the catalog key of its tokens' name
    sublayers: dict[str, tuple[str, ...]]  # stack -> the sublayers of one of its layers, in order
    input_name: str  # what its input is called: "source", or the one stream's "prompt"
    forced_name: str  # what a teacher-forced output is called: the decoder's "target", or the stream's "answer"
    # The catalog suffix of its words where the two forms say things differently ("" or "_decoder_only")
    words: str

    @property
    def one_stream(self) -> bool:
        """Whether the input and the output are one token stream (no source)."""
        return "src" not in self.sides

    def input_tokens(self, trace, prompt_len: int) -> tuple[str, ...] | None:
        """The input's display tokens: the source, or the one stream's prompt (its first `prompt_len`)."""
        if self.one_stream:
            return None if trace.tgt_tokens is None else tuple(trace.tgt_tokens[:prompt_len])
        return trace.src_tokens

    def forced_tokens(self, trace, prompt_len: int) -> tuple[str, ...] | None:
        """A teacher-forced output's display tokens: the decoder's input, or the stream after the prompt."""
        if trace.tgt_tokens is None:
            return None
        return tuple(trace.tgt_tokens[prompt_len:] if self.one_stream else trace.tgt_tokens)

    def visible_inputs(self, trace, position: int) -> slice:
        """The input positions output position `position` may read: the source before its padding, or a
        decoder-only model's stream up to `position`."""
        if self.one_stream:
            return slice(0, position + 1)
        return slice(0, sum(token != "<pad>" for token in trace.src_tokens))

    def aligned_keys(self, trace) -> tuple[str, ...] | None:
        """The tokens the aligning attention's keys are (its columns): the source, or the whole stream."""
        return trace.attention_tokens(self.aligning_kind)[1]

    def has_kind(self, kind: str) -> bool:
        return kind in self.kinds


ENCODER_DECODER = Form(
    "encoder_decoder", tuple(ATTENTION_KINDS), ("encoder", "decoder"), ("src", "tgt"), "cross",
    {"src": "src", "tgt": "tgt"}, {"src": "tokens.source", "tgt": "tokens.target"},
    {"encoder": ("self_attn", "ffn"), "decoder": ("self_attn", "cross_attn", "ffn")}, "source", "target", "")
DECODER_ONLY = Form(
    "decoder_only", ("decoder_self",), ("decoder",), ("tgt",), "decoder_self", {"tgt": "stream"},
    {"tgt": "tokens.stream"},
    {"decoder": ("self_attn", "ffn")}, "prompt", "answer", "_decoder_only")
FORMS = {form.name: form for form in (ENCODER_DECODER, DECODER_ONLY)}  # by config.ARCHITECTURES's names


def form_of(config) -> Form:
    """The form of a model of `config` (a ModelConfig, a Hugging Face model's config; None: the paper's)."""
    return FORMS[getattr(config, "architecture", "encoder_decoder")]
