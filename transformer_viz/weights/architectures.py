"""The Hugging Face models as Architectures (analysis/architecture.py), and `architecture_of` for every model.

A Hugging Face encoder-decoder (Marian, BART, T5) and a causal model (GPT-2, the Llama layout) answer the same
questions as the toy models: their form, their output vocabulary (the tokenizer's), how to run text with a trace
(greedy, their own readout) and the logit lens. They read any text (no task), are traced but not trained, and
take no intervention.
"""

from __future__ import annotations

from transformer_viz.analysis.architecture import Architecture
from transformer_viz.analysis.architecture import architecture_of as toy_architecture_of
from transformer_viz.trace.form import DECODER_ONLY, ENCODER_DECODER
from transformer_viz.weights import hf, hf_causal, hf_causal_views

DEFAULT_MAX_LEN = 64  # positions of a run when the caller names none


class _HuggingFace(Architecture):
    toy = False
    words = ("_hf",)

    def output_vocab(self, model, task):
        return hf_causal_views.TokenizerVocab(model)

    def run_text(self, model, task, src_text, tgt_text=None, *, max_new_tokens=None, pad_to=0, intervention=None,
                 sampling=None, max_len=None):
        if intervention is not None:
            raise ValueError("Interventions run on the toy models only.")
        max_len = DEFAULT_MAX_LEN if max_len is None else max_len
        return self._run(model, src_text, tgt_text or None, max_len // 2 if max_new_tokens is None else max_new_tokens,
                         pad_to, max_len)


class HuggingFaceEncoderDecoder(_HuggingFace):
    """Marian, BART and T5 (weights/hf.py), greedy by their own argmax loop."""

    form = ENCODER_DECODER

    def _run(self, model, src_text, tgt_text, max_new_tokens, pad_to, max_len):
        return hf.run_text(model, src_text, tgt_text, pad_to=pad_to, max_len=max_len, max_new_tokens=max_new_tokens)

    def logit_lens(self, model, trace, task):
        return hf.logit_lens(model, trace)

    def head_walkthrough(self, model, trace, kind, layer, head):
        return hf.head_walkthrough(model, trace, kind, layer, head)

    def parameter_counts(self, model):
        return hf.parameter_counts(model)


class HuggingFaceCausal(_HuggingFace):
    """GPT-2 and the Llama layout (weights/hf_causal.py): the source text is the prompt."""

    form = DECODER_ONLY
    words = ("_hf_causal", "_hf", "_decoder_only")

    def _run(self, model, src_text, tgt_text, max_new_tokens, pad_to, max_len):
        return hf_causal.run_text(model, src_text, max_new_tokens=max_new_tokens, max_len=max_len,
                                  tgt_text=tgt_text, pad_to=pad_to)

    def logit_lens(self, model, trace, task):
        return hf_causal_views.logit_lens(model, trace)

    def head_walkthrough(self, model, trace, kind, layer, head):
        return hf_causal_views.head_walkthrough(model, trace, kind, layer, head)

    def parameter_counts(self, model):
        return hf_causal_views.parameter_counts(model)

    def turns_as_drawn(self, model):
        return hf_causal_views.turns_as_the_toy(model)


HUGGING_FACE = {hf.HFModel: HuggingFaceEncoderDecoder(), hf_causal.HFCausalModel: HuggingFaceCausal()}


def architecture_of(model) -> Architecture:
    """The Architecture of any model the app shows: a Hugging Face model's by its class, a toy model's by its
    config. The one place that tells the four kinds apart."""
    found = HUGGING_FACE.get(type(model))
    return found if found is not None else toy_architecture_of(model)
