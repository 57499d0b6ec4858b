"""A task as language modelling, for decoder-only (GPT-style) models: the prompt and its answer in one sequence.

Sequence format (one token stream, one vocabulary for both sides):

    sequence  = <bos> + prompt tokens + "=" + answer tokens + <eos>
                e.g. <bos> s t r e s s e d = d e s s e r t s <eos>
    input ids = sequence without its last token
    labels    = sequence without its first token, <pad> (not counted) wherever the next token is still the prompt

So position t predicts token t + 1, and only the answer and its <eos> count in the loss: the position of "="
writes the answer's first token. A batch is padded on the right; under the causal mask padding at the end never
changes an earlier position, and its labels are <pad>, so padding never counts.

A task of form "continue" (`Task.lm_form`, the induction task) is one stream with no "=" and no <eos>: the prompt
is the input and its first token once more, the answer the rest, and every next token counts in the loss.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from transformer_viz.config import ModelConfig
from transformer_viz.data.tasks.base import Task, _check_length, check_text
from transformer_viz.data.vocab import Vocab, pad_rows

SEPARATOR = "="  # between the prompt and its answer; typed in a prompt it is read as <unk>


@functools.cache
def lm_vocab(task: Task) -> Vocab:
    """The one vocabulary of a task's decoder-only model: the specials, "=", the prompt's tokens, the answer's."""
    specials = len(Vocab.SPECIALS)
    return Vocab.from_tokens([SEPARATOR, *task.src_vocab.tokens[specials:], *task.tgt_vocab.tokens[specials:]])


def lm_max_len(task: Task) -> int:
    """The longest sequence of a task's decoder-only model, as generation returns it: <bos> + prompt + "=" + answer
    + <eos>; for form "continue", <bos> + input + cue + answer."""
    return task.max_input_len + task.max_target_len + (3 if task.lm_form == "answer" else 2)


def lm_config(task: Task, **shape) -> ModelConfig:
    """A decoder-only ModelConfig fitted to `task` (its vocabulary, <pad>, max_len); `shape` sets the rest, with
    `layers=n` for n_decoder_layers. The unused encoder settings mirror the decoder's."""
    if "layers" in shape:
        shape["n_decoder_layers"] = shape.pop("layers")
    size = len(lm_vocab(task))
    settings = dict(max_len=lm_max_len(task), **task.model_defaults) | shape
    return ModelConfig(src_vocab_size=size, tgt_vocab_size=size, pad_id=Vocab.pad_id, architecture="decoder_only",
                       **settings)


def check_lm_fits(task: Task, config: ModelConfig) -> None:
    """Raise ValueError unless a decoder-only model of `config` reads `task` as a language model."""
    size = len(lm_vocab(task))
    if config.architecture != "decoder_only" or config.tgt_vocab_size != size or config.pad_id != Vocab.pad_id:
        raise ValueError(f"A decoder-only model of the {task.name} task has one vocabulary of {size} tokens with "
                         f"<pad> = {Vocab.pad_id}, but the config has architecture = {config.architecture}, "
                         f"tgt_vocab_size = {config.tgt_vocab_size} and pad_id = {config.pad_id}.")
    if config.max_len < lm_max_len(task):
        raise ValueError(f"max_len = {config.max_len} is too short for the {task.name} task as one sequence: it "
                         f"needs {lm_max_len(task)} positions (<bos>, the longest prompt, \"=\" and the answer).")


@dataclass(frozen=True)
class Prompt:
    """A prompt for a decoder-only model: `ids` (1, prompt_len) = <bos> + tokens + "="; `tokens` their display
    strings; `pieces` the tokens as typed; `unknown` the typed tokens the prompt side does not know, in order."""

    ids: torch.Tensor
    tokens: tuple[str, ...]
    pieces: tuple[str, ...]
    unknown: tuple[str, ...]


def prompt_ids(task: Task, pieces: Sequence[str]) -> list[int]:
    """<bos> + the prompt's ids + "=" (form "continue": + its first id again): a token the prompt side does not
    know ("=" too) is <unk>."""
    vocab = lm_vocab(task)
    known = [vocab.index(piece) if piece in task.src_vocab else vocab.unk_id for piece in pieces]
    end = vocab.index(SEPARATOR) if task.lm_form == "answer" else known[0]
    return [vocab.bos_id, *known, end]


def encode_prompt(task: Task, text: str) -> Prompt:
    """Input text -> the prompt a decoder-only model continues. Raises ValueError as `encode_source` does."""
    check_text(task, text, None, "input")
    pieces = task.split(text)
    _check_length(task, pieces, task.max_input_len, None, "input")
    ids = prompt_ids(task, pieces)
    return Prompt(ids=torch.tensor([ids], dtype=torch.int64),  # (1, prompt_len)
                  tokens=tuple(lm_vocab(task).decode(ids)), pieces=tuple(pieces),
                  unknown=tuple(piece for piece in pieces if piece not in task.src_vocab))


def sequence(task: Task, pieces: Sequence[str], answer: Sequence[str] | None = None) -> tuple[list[int], list[int]]:
    """A prompt and its answer (None: the correct one) -> (input ids, labels) of equal length: the whole sequence
    but its last token, and the sequence but its first, <pad> up to the position before the answer (form
    "continue": every next token is a label)."""
    answer = task.target_tokens(pieces) if answer is None else answer
    vocab = lm_vocab(task)
    prompt = prompt_ids(task, pieces)
    if task.lm_form == "continue":
        full = [*prompt, *vocab.encode(answer)]
        return full[:-1], full[1:]
    full = [*prompt, *vocab.encode(answer), vocab.eos_id]
    return full[:-1], [vocab.pad_id] * (len(prompt) - 1) + full[len(prompt):]


def lm_batch(task: Task, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Input texts -> (ids (batch, length), labels (batch, length)), right-padded with <pad>."""
    rows = [sequence(task, task.split(text)) for text in texts]
    return pad_rows([ids for ids, _ in rows]), pad_rows([labels for _, labels in rows])


def answer_of(task: Task, ids: Sequence[int], prompt_len: int) -> list[str]:
    """The tokens a model wrote after a prompt of `prompt_len` ids, up to (not including) <eos> or <pad>."""
    answer = []
    for token in lm_vocab(task).decode(ids[prompt_len:]):
        if token in (Vocab.EOS, Vocab.PAD):
            break
        answer.append(token)
    return answer
