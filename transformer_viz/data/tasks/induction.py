"""Induction heads' task (Olsson et al. 2022, "In-context learning and induction heads"): a random sequence,
then the same sequence again. A decoder-only model reads it as one stream and predicts every next token.

The first half is random, so no model can predict it (its loss stays near ln of the letters left); the second
half is predictable only by looking back: find the earlier occurrence of the current token and copy the token
that followed it. A 2-layer attention-only model learns this with two heads that compose, a previous-token head
in layer 1 and an induction head in layer 2, and it learns it suddenly (a "phase change" in the loss).

As a prompt and its answer (data/tasks/lm.py, form "continue"): the prompt is the random letters and the first
letter once more (the cue), the answer the rest of the repeat. Letters are distinct within a sequence, so every
token of the repeat has exactly one earlier occurrence and the gold source of each answer token is unambiguous.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import MappingProxyType

from transformer_viz.data.tasks.algorithmic import ALPHABET
from transformer_viz.data.tasks.base import Task, TrainDefaults
from transformer_viz.data.vocab import Vocab

MIN_LETTERS, MAX_LETTERS = 8, 15


class InductionTask(Task):
    """Random distinct letters, repeated: the answer to "x1 … xn x1" is "x2 … xn"."""

    name = "induction"
    title = "Repeat a random sequence"
    description = "Random letters, then the same letters again: the second half can only be copied from the first."
    level = "char"
    alphabet = ALPHABET
    max_input_len = MAX_LETTERS
    max_target_len = MAX_LETTERS - 1
    examples = ("qwhzkvmcatj", "bqfxrenmud", "lkjhgfdsaz")
    lm_form = "continue"
    # 2 attention-only layers, as the paper's smallest models that form induction heads. Rotary positions: with
    # sinusoidal or learned ones our small models found another way to copy (offsets from positions, no head
    # scoring above 0.15), with rotary ones layer 2's heads became induction heads.
    model_defaults = MappingProxyType({"attention_only": True, "n_decoder_layers": 2, "positional": "rotary"})
    train_defaults = TrainDefaults(steps=3000, batch_size=64, lr=1e-3, warmup=100)

    def __init__(self) -> None:
        self.src_vocab = self.tgt_vocab = Vocab.from_tokens(ALPHABET)

    def split(self, text: str) -> list[str]:
        """One token per character; surrounding spaces are ignored, letters are lower-cased."""
        return list(text.strip().lower())

    def join(self, tokens: Sequence[str]) -> str:
        return "".join(tokens)

    def gold(self, tokens: Sequence[str]) -> tuple[list[str], list[tuple[int, int]]]:
        """The repeat after its first letter; answer token j is input token j + 1."""
        return list(tokens[1:]), [(j + 1, j) for j in range(len(tokens) - 1)]

    def sample_input(self, rng: random.Random) -> str:
        """MIN_LETTERS to MAX_LETTERS distinct letters in random order."""
        return "".join(rng.sample(self.alphabet, rng.randint(MIN_LETTERS, MAX_LETTERS)))


INDUCTION = InductionTask()
