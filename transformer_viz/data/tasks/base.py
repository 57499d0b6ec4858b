"""What every toy task shares, and the one sequence format used everywhere.

Sequence format (the same for every task, in training, in the app and in the tests):

    source         = input tokens + <eos>              e.g.  h e l l o <eos>
    decoder input  = <bos> + target tokens             e.g.  <bos> o l l e h
    decoder output = target tokens + <eos>             e.g.  o l l e h <eos>

So row j of a cross-attention map (decoder query j) is the step that writes target
token j, and column i is source token i: an alignment pair (i, j) is the cell
[row j, column i]. The last row writes <eos>.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import torch

from transformer_viz.config import ModelConfig, is_whole
from transformer_viz.data.vocab import Vocab, pad_rows
from transformer_viz.errors import TranslatableError


@dataclass(frozen=True)
class TrainDefaults:
    """The training settings a task's shipped model was trained with (the CLI's defaults)."""

    steps: int = 2000
    batch_size: int = 64
    lr: float = 1e-3
    warmup: int = 100
    label_smoothing: float = 0.0


class Task:
    """A toy sequence-to-sequence task: its tokens, its ground truth and its gold alignment.

    Subclasses set the attributes below and implement `gold(tokens)` and `sample_input(rng)`.
    Tasks are shared by everyone (see TASKS): treat them as read-only.
    """

    name: str
    title: str
    level: str  # "char" or "word"
    description: str = ""
    alphabet: str = ""  # the known characters (char tasks)
    max_input_len: int  # source tokens, without <eos>
    max_target_len: int  # target tokens, without <bos> / <eos>
    examples: tuple[str, ...]  # inputs that look good in class; examples[0] is the training probe
    src_vocab: Vocab
    tgt_vocab: Vocab
    train_defaults: TrainDefaults = TrainDefaults()
    model_defaults: Mapping[str, object] = MappingProxyType({})  # ModelConfig settings, e.g. dropout
    # How a decoder-only model reads the task (data/tasks/lm.py): "answer" (prompt = answer, scored on the answer)
    # or "continue" (one stream continued, every next token scored).
    lm_form: str = "answer"

    def __repr__(self) -> str:
        return f"<Task {self.name!r}: {self.title}>"

    @property
    def max_len(self) -> int:
        """The longest sequence the model must read: source + <eos> or <bos> + target."""
        return max(self.max_input_len, self.max_target_len) + 1

    # --- text <-> tokens -------------------------------------------------------------------

    def split(self, text: str) -> list[str]:
        """Input text -> tokens (characters or words)."""
        raise NotImplementedError

    def split_target(self, text: str) -> list[str]:
        """Target text -> tokens (the inverse of `join`)."""
        return self.split(text)

    def join(self, tokens: Sequence[str]) -> str:
        """Target tokens -> text."""
        raise NotImplementedError

    # --- ground truth ----------------------------------------------------------------------

    def gold(self, tokens: Sequence[str]) -> tuple[list[str], list[tuple[int, int]]]:
        """Input tokens -> (correct target tokens, alignment pairs (source i, target j))."""
        raise NotImplementedError

    def target(self, text: str) -> str:
        """The correct output for an input text."""
        return self.join(self.gold(self.split(text))[0])

    def target_tokens(self, tokens: Sequence[str]) -> list[str]:
        """The correct output tokens for input tokens."""
        return self.gold(tokens)[0]

    def alignment(self, src_tokens: Sequence[str], tgt_tokens: Sequence[str]) -> list[tuple[int, int]]:
        """Gold pairs (source position i, target position j): target token j comes from source token i.

        Special tokens (<bos>, <eos>, <pad>) are ignored, so trace display tokens work too;
        positions count real tokens only, which matches cross-attention rows and columns
        (see the module docstring). Pairs past the end of `tgt_tokens` are dropped. Inputs the
        task cannot answer (e.g. a sentence outside the grammar) have no gold pairs: [].
        """
        src = [t for t in src_tokens if t not in (Vocab.PAD, Vocab.BOS, Vocab.EOS)]
        tgt = [t for t in tgt_tokens if t not in (Vocab.PAD, Vocab.BOS, Vocab.EOS)]
        if not src:
            return []
        try:
            _, pairs = self.gold(src)
        except ValueError:
            return []
        return [(i, j) for i, j in pairs if j < len(tgt)]

    # --- data ------------------------------------------------------------------------------

    def sample_input(self, rng: random.Random) -> str:
        """A random input text (possibly one of the training inputs)."""
        raise NotImplementedError

    def training_inputs(self) -> tuple[str, ...] | None:
        """The fixed training set, or None when training draws fresh random inputs every step."""
        return None

    def heldout_input(self, rng: random.Random) -> str:
        """A random input that is not in the fixed training set (any input when there is none)."""
        pool = self.training_inputs()
        seen = frozenset(pool) if pool else frozenset()
        while True:
            text = self.sample_input(rng)
            if text not in seen:
                return text


@dataclass(frozen=True)
class SourceInput:
    """An input text read by the encoder.

    `ids` (1, src_len) ends with <eos>; `tokens` are their display strings (unknown tokens
    show as <unk>, as the model sees them); `pieces` are the tokens as typed (no <eos>);
    `unknown` lists the typed tokens the vocabulary does not know, in order.
    """

    ids: torch.Tensor
    tokens: tuple[str, ...]
    pieces: tuple[str, ...]
    unknown: tuple[str, ...]


@dataclass(frozen=True)
class TargetInput:
    """A target text for a teacher-forced pass.

    `ids` (1, tgt_len) is the decoder input <bos> + tokens; `labels` (1, tgt_len) is what
    each position should write, tokens + <eos>; `tokens` are the display strings of `ids`.
    """

    ids: torch.Tensor
    labels: torch.Tensor
    tokens: tuple[str, ...]
    pieces: tuple[str, ...]
    unknown: tuple[str, ...]


def _unit(task: Task, count: int) -> str:
    word = "character" if task.level == "char" else "word"
    return word if count == 1 else word + "s"


def _too_long(task: Task, side: str, count: int, limit: int, max_len: int | None) -> TranslatableError:
    """The error for text longer than `limit` pieces: the task's limit, or a longer model's (`max_len`)."""
    values = dict(side=side, count=count, units=_unit(task, count), limit=limit, limit_units=_unit(task, limit))
    if max_len is None:
        return TranslatableError(
            "text.too_long_for_task", f"The {side} has {count} {values['units']}, but the {task.name} task reads at "
            f"most {limit} {values['limit_units']}. Please shorten it.", task=task.name, **values)
    return TranslatableError(
        "text.too_long_for_model", f"The {side} has {count} {values['units']}, but this model (max_len {max_len}) "
        f"reads at most {limit} {values['limit_units']}. Please shorten it.", max_len=max_len, **values)


def _check_length(task: Task, pieces: list[str], task_limit: int, max_len: int | None, side: str) -> None:
    """Raise ValueError for empty text or more tokens than the task (or a longer model) reads.

    A model built for longer sequences than its task (max_len > task.max_len, e.g. a fresh
    model for exploring long inputs) reads up to its own max_len; otherwise the task's limit holds.
    The model reads one special token more than the text: <eos> after a source, <bos> before a target.
    """
    if not pieces:
        unit = _unit(task, 1)
        raise TranslatableError("text.empty", f"The {side} is empty: type at least one {unit}.", side=side, unit=unit)
    if max_len is not None and max_len > task.max_len:
        limit, longer_model = max_len - 1, max_len
    else:
        limit, longer_model = task_limit if max_len is None else min(task_limit, max_len - 1), None
    if len(pieces) > limit:
        raise _too_long(task, side, len(pieces), limit, longer_model)


def check_text(task: Task, text: str, max_len: int | None, side: str) -> None:
    """Raise ValueError unless `task` is a Task, `text` a str and `max_len` None or a positive int."""
    if not isinstance(task, Task):
        raise ValueError(f"task must be a Task, such as get_task('copy'), got {task!r}.")
    if not isinstance(text, str):
        raise ValueError(f"The {side} must be text (a str), got {text!r}.")
    if max_len is not None and not (is_whole(max_len) and max_len > 0):
        raise ValueError(f"The model's max_len must be a positive whole number (or None), got {max_len!r}.")


def encode_source(task: Task, text: str, max_len: int | None = None) -> SourceInput:
    """Input text -> encoder ids (1, src_len) ending with <eos>.

    Raises ValueError for text that is not a str, empty text or text longer than the task
    allows (or, for a model with a larger `max_len` than the task's, than the model allows).
    Unknown tokens do not raise: they become <unk> and are listed.
    """
    check_text(task, text, max_len, "input")
    pieces = task.split(text)
    _check_length(task, pieces, task.max_input_len, max_len, "input")
    vocab = task.src_vocab
    ids = [*vocab.encode(pieces), vocab.eos_id]
    return SourceInput(
        ids=torch.tensor([ids], dtype=torch.int64),  # (1, src_len)
        tokens=tuple(vocab.decode(ids)),
        pieces=tuple(pieces),
        unknown=tuple(piece for piece in pieces if piece not in vocab),
    )


def encode_target(task: Task, text: str, max_len: int | None = None) -> TargetInput:
    """Target text -> decoder input ids (1, tgt_len) starting with <bos>, and the labels to predict.

    Same errors and unknown-token handling as `encode_source`.
    """
    check_text(task, text, max_len, "target")
    pieces = task.split_target(text)
    _check_length(task, pieces, task.max_target_len, max_len, "target")
    vocab = task.tgt_vocab
    body = vocab.encode(pieces)
    ids = [vocab.bos_id, *body]
    return TargetInput(
        ids=torch.tensor([ids], dtype=torch.int64),  # (1, tgt_len)
        labels=torch.tensor([[*body, vocab.eos_id]], dtype=torch.int64),  # (1, tgt_len)
        tokens=tuple(vocab.decode(ids)),
        pieces=tuple(pieces),
        unknown=tuple(piece for piece in pieces if piece not in vocab),
    )


_FIXED = ("src_vocab_size", "tgt_vocab_size", "pad_id")


@functools.cache
def default_config(task: Task) -> ModelConfig:
    """A task's own ModelConfig: its vocabulary sizes, pad id, longest sequence (max_len) and model defaults
    (e.g. dropout); every other setting is ModelConfig's default (the shipped models' shape). Built once per task;
    a shape is `dataclasses.replace(default_config(task), d_model=..., ...)`."""
    return ModelConfig(src_vocab_size=len(task.src_vocab), tgt_vocab_size=len(task.tgt_vocab), pad_id=Vocab.pad_id,
                       max_len=task.max_len, **task.model_defaults)


def model_config_for(task: Task, **shape) -> ModelConfig:
    """A ModelConfig fitted to a task: vocabulary sizes, pad id and max_len come from the task.

    `shape` overrides the rest (d_model, n_heads, d_ff, dropout, the variants, ...);
    `layers=n` sets both n_encoder_layers and n_decoder_layers.
    """
    fixed = sorted(set(shape) & set(_FIXED))
    if fixed:
        raise ValueError(f"{', '.join(fixed)} come from the task's vocabularies and cannot be changed.")
    if "layers" in shape:
        layers = shape.pop("layers")
        shape = dict(n_encoder_layers=layers, n_decoder_layers=layers) | shape
    config = ModelConfig.from_dict(default_config(task).to_dict() | shape)
    check_fits(task, config)
    return config


def check_fits(task: Task, config: ModelConfig) -> None:
    """Raise ValueError unless a model of `config` reads `task`: its vocabularies, <pad> and longest sequence."""
    sizes, needed = (config.src_vocab_size, config.tgt_vocab_size), (len(task.src_vocab), len(task.tgt_vocab))
    if sizes != needed or config.pad_id != Vocab.pad_id:
        raise ValueError(
            f"The {task.name} task has vocabularies of {needed[0]} and {needed[1]} tokens with <pad> = "
            f"{Vocab.pad_id}, but the config has src_vocab_size = {sizes[0]}, tgt_vocab_size = {sizes[1]} "
            f"and pad_id = {config.pad_id}."
        )
    if config.max_len < task.max_len:
        raise ValueError(
            f"max_len = {config.max_len} is too short for the {task.name} task, whose sequences "
            f"need {task.max_len} positions (the longest text plus <bos> or <eos>)."
        )


def make_batch(task: Task, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Input texts -> (src (batch, src_len), decoder input (batch, tgt_len), labels (batch, tgt_len))."""
    src, tgt_in, labels = [], [], []
    for text in texts:
        pieces = task.split(text)
        target = task.target_tokens(pieces)
        src.append([*task.src_vocab.encode(pieces), Vocab.eos_id])
        body = task.tgt_vocab.encode(target)
        tgt_in.append([Vocab.bos_id, *body])
        labels.append([*body, Vocab.eos_id])
    return pad_rows(src), pad_rows(tgt_in), pad_rows(labels)
