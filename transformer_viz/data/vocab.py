"""Vocabularies: the table between tokens (characters or words) and the integer ids the model reads.

Every vocabulary starts with the same four special tokens, always at the same ids:
`<pad>` 0 (fills short sequences; attention never looks at it), `<bos>` 1 (the
decoder's first input, "begin writing"), `<eos>` 2 ("the sequence ends here") and
`<unk>` 3 (any token the vocabulary does not know). A token that is not in the
table is read as `<unk>` instead of raising, so a student may type anything and
the app can point at what the model could not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Vocab:
    """An ordered, immutable token table: the specials first, then the task's own tokens.

    Build one with `Vocab.from_tokens(["a", "b", ...])`; `Vocab(tokens)` expects the
    full table including the four specials at ids 0 to 3.
    """

    PAD = "<pad>"
    BOS = "<bos>"
    EOS = "<eos>"
    UNK = "<unk>"
    SPECIALS = (PAD, BOS, EOS, UNK)
    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3

    tokens: tuple[str, ...]
    _ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tokens = tuple(self.tokens)
        object.__setattr__(self, "tokens", tokens)
        if tokens[: len(self.SPECIALS)] != self.SPECIALS:
            raise ValueError(f"A vocabulary must start with the special tokens {', '.join(self.SPECIALS)}.")
        if not all(isinstance(token, str) and token for token in tokens):
            raise ValueError("Every token of a vocabulary must be a non-empty string.")
        if len(set(tokens)) != len(tokens):
            repeated = sorted({token for token in tokens if tokens.count(token) > 1})
            raise ValueError(f"A vocabulary lists each token once; repeated: {', '.join(repeated)}.")
        object.__setattr__(self, "_ids", {token: i for i, token in enumerate(tokens)})

    @classmethod
    def from_tokens(cls, tokens: Iterable[str]) -> Vocab:
        """The specials followed by `tokens` in the order given (duplicates and specials skipped)."""
        ordered = dict.fromkeys(token for token in tokens if token not in cls.SPECIALS)
        return cls(cls.SPECIALS + tuple(ordered))

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._ids

    def index(self, token: str) -> int:
        """The id of `token`, or `unk_id` if the vocabulary does not know it."""
        return self._ids.get(token, self.unk_id)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Tokens -> ids; unknown tokens become `unk_id`."""
        return [self.index(token) for token in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Ids -> tokens (specials included); raises ValueError for an id outside the table."""
        tokens = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.tokens):
                raise ValueError(f"Token id {i} is outside this vocabulary (ids 0 to {len(self.tokens) - 1}).")
            tokens.append(self.tokens[i])
        return tokens

    def is_special(self, token: str) -> bool:
        """True for <pad>, <bos>, <eos> and <unk>."""
        return token in self.SPECIALS

    def to_dict(self) -> dict:
        return {"tokens": list(self.tokens)}

    @classmethod
    def from_dict(cls, data: dict) -> Vocab:
        if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
            raise ValueError("A saved vocabulary is a JSON object with a list of 'tokens'.")
        return cls(tuple(data["tokens"]))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Vocab:
        return cls.from_dict(json.loads(text))


def pad_rows(rows: Sequence[Sequence[int]], pad_id: int = Vocab.pad_id) -> torch.Tensor:
    """Ragged id lists -> (batch, longest) int64, padded on the right."""
    ids = torch.full((len(rows), max(len(row) for row in rows)), pad_id, dtype=torch.int64)  # (batch, len)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.int64)
    return ids
