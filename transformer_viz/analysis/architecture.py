"""One interface over every model the app shows: what the views, the lesson, training and the API ask of a model.

An `Architecture` answers, for the models of one kind: its form (trace/form.py: attention kinds, streams, the
attention that aligns output with input), the tasks it learns and the config for one, whether a config reads a
task, its output vocabulary, how to run text with a trace (teacher-forced or decoded, greedy or sampled), how to
make a training batch and how to read its residual stream out (the logit lens). Four implementations: the toy
encoder-decoder and the toy decoder-only model here, the Hugging Face encoder-decoders and causal models in
`weights/` (each of those models carries its own as `.architecture`). `architecture_of(model)` is the one place
that tells them apart; nothing above branches on the kind of model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from transformer_viz.analysis.measures import logit_lens
from transformer_viz.analysis.runs import run_lm_text, run_seq2seq_text
from transformer_viz.analysis.walkthrough import head_walkthrough
from transformer_viz.config import ModelConfig
from transformer_viz.data.tasks import LM_TASKS, TASKS, Task, encode_source, encode_target
from transformer_viz.data.tasks.base import check_fits, make_batch, model_config_for
from transformer_viz.data.tasks.lm import (
    answer_of,
    check_lm_fits,
    lm_batch,
    lm_config,
    lm_vocab,
    prompt_ids,
    sequence,
)
from transformer_viz.data.vocab import Vocab
from transformer_viz.model.decoder_only import check_toy_model
from transformer_viz.model.sampling import Sampling
from transformer_viz.model.summary import parameter_counts
from transformer_viz.trace.form import DECODER_ONLY, ENCODER_DECODER, Form
from transformer_viz.trace.intervention import Intervention


class Architecture:
    """The questions every model answers; one subclass per kind of model."""

    form: Form
    toy: bool = True  # trained, changed, compared, sampled and explained by gradients here (a Hugging Face model
    #                   is traced: its own greedy decoding, no intervention)
    # Catalog suffixes of this model's own descriptions, most particular first (a key without one is everyone's)
    words: tuple[str, ...] = ()

    def tasks(self) -> Mapping[str, Task]:
        """The tasks a model of this kind learns (a Hugging Face model reads any text: none)."""
        return {}

    def task_config(self, task: Task, **shape) -> ModelConfig:
        """The config of this kind's model of `task`, `shape` overriding the task's defaults."""
        raise ValueError(f"A {self.form.name} model of this kind is not built from a task.")

    def check_fits(self, task: Task, config: ModelConfig) -> None:
        """ValueError unless a model of `config` reads `task`."""
        raise ValueError(f"A {self.form.name} model of this kind is not built from a task.")

    def pretrained_name(self, task_name: str) -> str:
        """The shipped checkpoint of a task's model of this kind."""
        raise ValueError("Only the toy models are shipped.")

    def output_vocab(self, model, task: Task | None):
        """The tokens of the model's output ids (`.decode(ids)`, `.index(piece)`)."""
        raise NotImplementedError

    def run_text(self, model, task: Task | None, src_text: str, tgt_text: str | None = None, *,
                 max_new_tokens: int | None = None, pad_to: int = 0, intervention: Intervention | None = None,
                 sampling: Sampling | None = None, max_len: int | None = None):
        """A `TextRun` (analysis/runs.py): the text through the model with a trace; `max_len` caps the positions
        of a model that reads any text (a toy model reads at most its own max_len)."""
        raise NotImplementedError

    def training_batch(self, task: Task, texts: Sequence[str]) -> tuple[torch.Tensor, ...]:
        """The model's inputs and then its labels for `texts` of `task`."""
        raise ValueError("Only the toy models train here.")

    def answers(self, model, task: Task, texts: Sequence[str], *, max_new_tokens: int | None = None,
                intervention: Intervention | None = None, sampling: Sampling | None = None) -> list[list[str]]:
        """Each text's answer tokens, generated in batches (greedy, or drawn as `sampling` says), up to <eos>."""
        raise ValueError("Only the toy models answer a task here.")

    def alignment_offsets(self, task: Task, pieces: Sequence[str]) -> tuple[int, int]:
        """(query, key) offsets of the aligning attention: answer token j is written by query j + the first, input
        token i is key i + the second."""
        raise ValueError("Only the toy models answer a task here.")

    def probe(self, task: Task, text: str) -> tuple[tuple[torch.Tensor, ...], tuple[str, ...], tuple[str, ...]]:
        """(the model's inputs, their source tokens, their decoder tokens) of `text` and its correct answer."""
        raise ValueError("Only the toy models train here.")

    def head_walkthrough(self, model, trace, kind: str, layer: int, head: int):
        """One head step by step with the model's weights (analysis/walkthrough.py::HeadWalkthrough)."""
        return head_walkthrough(model, trace, kind, layer, head)

    def parameter_counts(self, model) -> dict[str, int]:
        """Parameters per block, in the toy model's block names (model/summary.py)."""
        return parameter_counts(model)

    def turns_as_drawn(self, model) -> bool:
        """Whether the rotary angles the Embeddings page draws are this model's own."""
        return True

    def input_vocab(self, task: Task) -> Vocab:
        """The vocabulary of the tokens the model reads as its input (the source's, or its one stream's)."""
        return self.output_vocab(None, task)

    def input_ids(self, task: Task, trace) -> tuple[torch.Tensor, ...]:
        """The model's inputs (ids of shape (1, length) each) read back from a trace's tokens; the first is the input
        whose token embeddings `logits_with` takes."""
        raise ValueError("Only the toy models are explained by gradients here.")

    def logits_with(self, model, inputs: tuple[torch.Tensor, ...], input_token: torch.Tensor | None = None):
        """model(*inputs) -> logits (batch, tgt_len, vocab), the first input's token embeddings (batch, len,
        d_model) given instead of looked up."""
        raise ValueError("Only the toy models are explained by gradients here.")

    def input_table(self, model):
        """The embedding table of the first input (an nn.Embedding)."""
        raise ValueError("Only the toy models are explained by gradients here.")

    def logit_lens(self, model, trace, task: Task | None):
        """Each layer's residual stream read out as the last layer's is (analysis/measures.py::LogitLens)."""
        return logit_lens(model, trace, self.output_vocab(model, task))


class ToyEncoderDecoder(Architecture):
    """The paper's Transformer (model/transformer.py): a source in, its target out."""

    form = ENCODER_DECODER

    def tasks(self) -> Mapping[str, Task]:
        return TASKS

    def task_config(self, task: Task, **shape) -> ModelConfig:
        return model_config_for(task, **shape)

    def check_fits(self, task: Task, config: ModelConfig) -> None:
        check_fits(task, config)

    def pretrained_name(self, task_name: str) -> str:
        return task_name

    def output_vocab(self, model, task: Task | None) -> Vocab:
        return task.tgt_vocab

    def input_vocab(self, task: Task) -> Vocab:
        return task.src_vocab

    def input_ids(self, task, trace):
        return (torch.tensor([task.src_vocab.encode(trace.src_tokens)]),  # (1, src_len)
                torch.tensor([task.tgt_vocab.encode(trace.tgt_tokens)]))  # (1, tgt_len)

    def logits_with(self, model, inputs, input_token=None):
        src_ids, tgt_ids = inputs
        return model(src_ids, tgt_ids, src_token=input_token)

    def input_table(self, model):
        return model.src_embed.token_table

    def run_text(self, model, task, src_text, tgt_text=None, *, max_len=None, **how):
        return run_seq2seq_text(model, task, src_text, tgt_text, **how)

    def training_batch(self, task: Task, texts: Sequence[str]) -> tuple[torch.Tensor, ...]:
        return make_batch(task, texts)

    def answers(self, model, task, texts, *, max_new_tokens=None, intervention=None, sampling=None):
        src = make_batch(task, texts)[0]  # (batch, src_len)
        limit = task.max_target_len + 1 if max_new_tokens is None else max_new_tokens
        out, _ = model.generate(src, limit, Vocab.bos_id, Vocab.eos_id, keep_steps=False, intervention=intervention,
                                sampling=sampling)  # (batch, 1 + n)
        return [answer_of_ids(task.tgt_vocab, row) for row in out[:, 1:].tolist()]

    def alignment_offsets(self, task, pieces):
        return 0, 0

    def probe(self, task, text):
        src, tgt = encode_source(task, text), encode_target(task, task.target(text))
        return (src.ids, tgt.ids), src.tokens, tgt.tokens


class ToyDecoderOnly(Architecture):
    """GPT's form (model/decoder_only.py): the prompt and its answer as one stream (data/tasks/lm.py)."""

    form = DECODER_ONLY
    words = ("_decoder_only",)

    def tasks(self) -> Mapping[str, Task]:
        return TASKS | LM_TASKS

    def task_config(self, task: Task, **shape) -> ModelConfig:
        return lm_config(task, **shape)

    def check_fits(self, task: Task, config: ModelConfig) -> None:
        check_lm_fits(task, config)

    def pretrained_name(self, task_name: str) -> str:
        return f"{task_name}-gpt"

    def output_vocab(self, model, task: Task | None) -> Vocab:
        return lm_vocab(task)

    def input_ids(self, task, trace):
        return (torch.tensor([lm_vocab(task).encode(trace.tgt_tokens)]),)  # (1, length)

    def logits_with(self, model, inputs, input_token=None):
        (ids,) = inputs
        return model(ids, token=input_token)

    def input_table(self, model):
        return model.tgt_embed.token_table

    def run_text(self, model, task, src_text, tgt_text=None, *, max_len=None, **how):
        return run_lm_text(model, task, src_text, tgt_text, **how)

    def training_batch(self, task: Task, texts: Sequence[str]) -> tuple[torch.Tensor, ...]:
        return lm_batch(task, texts)

    def answers(self, model, task, texts, *, max_new_tokens=None, intervention=None, sampling=None):
        """Prompts of one length at a time: a batch of prompts is not padded (its rows continue from one place)."""
        found: dict[int, list[str]] = {}
        by_length: dict[int, list[int]] = {}
        for row, text in enumerate(texts):
            by_length.setdefault(len(task.split(text)), []).append(row)
        for rows in by_length.values():
            pieces = [task.split(texts[row]) for row in rows]
            prompts = torch.tensor([prompt_ids(task, row_pieces) for row_pieces in pieces])  # (batch, prompt_len)
            # A stream with no <eos> ("continue") is continued by as many tokens as its answer has.
            limit = (task.max_target_len + 1 if task.lm_form == "answer" else len(task.target_tokens(pieces[0]))
                     ) if max_new_tokens is None else max_new_tokens
            out, _ = model.generate(prompts, limit, Vocab.eos_id, keep_steps=False, intervention=intervention,
                                    sampling=sampling)  # (batch, prompt_len + n)
            for row, ids in zip(rows, out.tolist(), strict=True):
                found[row] = answer_of(task, ids, prompts.shape[1])
        return [found[row] for row in range(len(texts))]

    def alignment_offsets(self, task, pieces):
        """The position before the answer ("=") writes its first token; the prompt's tokens follow <bos>."""
        return len(prompt_ids(task, pieces)) - 1, 1

    def probe(self, task, text):
        ids = torch.tensor([sequence(task, task.split(text))[0]])  # (1, length)
        tokens = tuple(lm_vocab(task).decode(ids[0]))
        return (ids,), tokens, tokens


def readable_target(task: Task | None, output: str | None) -> str:
    """A model's own output as a target it can read teacher-forced: cut to the longest target of its task (a random
    model may write until max_len); a model that reads any text (task None) reads it whole."""
    if task is None or not output:
        return output or ""
    return task.join(task.split(output)[:task.max_target_len])


def answer_of_ids(vocab: Vocab, ids: Sequence[int]) -> list[str]:
    """Generated ids after <bos> -> the tokens up to <eos> (a row's <pad>s after it dropped)."""
    if Vocab.eos_id in ids:
        ids = ids[: ids.index(Vocab.eos_id)]
    return [token for token in vocab.decode(ids) if token != Vocab.PAD]


TOY = {ENCODER_DECODER.name: ToyEncoderDecoder(), DECODER_ONLY.name: ToyDecoderOnly()}


def toy_architecture(name: str) -> Architecture:
    """The toy model of `ModelConfig.architecture` `name`; ValueError naming the known ones."""
    if name not in TOY:
        raise ValueError(f"unknown architecture {name!r}; known: {', '.join(TOY)}")
    return TOY[name]


def architecture_of(model) -> Architecture:
    """The Architecture of a toy model, by its config (any model's, Hugging Face's too:
    weights/architectures.py::architecture_of)."""
    check_toy_model(model, "a Transformer, a DecoderOnlyTransformer or a traced Hugging Face model")
    return TOY[model.config.architecture]
