"""A task's text through a toy model: tokenize, run (teacher-forced, greedy or sampled), attach the display tokens.

`run_seq2seq_text` for the encoder-decoder, `run_lm_text` for the decoder-only model; both give a `TextRun`.
Callers ask a model's Architecture (analysis/architecture.py), or the public `run_text` (analysis/inference.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from transformer_viz.config import is_whole
from transformer_viz.data.tasks import Task, encode_source, encode_target
from transformer_viz.data.tasks.base import check_text
from transformer_viz.data.tasks.lm import answer_of, encode_prompt, lm_vocab, sequence
from transformer_viz.data.vocab import Vocab
from transformer_viz.model import DecoderOnlyTransformer, Transformer
from transformer_viz.model.sampling import Sampling
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.record import Trace


@dataclass(frozen=True)
class TextRun:
    """One input through one model.

    `trace` covers the whole decoder input (<bos> + answer; a decoder-only model's: the prompt and the
    answer). When no target text was given the answer is decoded in `n_steps` steps, greedily or drawn as
    `sampling` says (None: greedy), `step(k)` is what step k computed and `output_text` the decoded text;
    when teacher-forced, `n_steps` is 0. `prompt_len` is the decoder input before the answer: <bos>, or a
    decoder-only model's whole prompt.
    """

    trace: Trace
    output_text: str | None
    output_tokens: tuple[str, ...]
    n_steps: int
    unknown: tuple[str, ...]
    sampling: Sampling | None = None
    prompt_len: int = 1

    @property
    def teacher_forced(self) -> bool:
        return self.n_steps == 0

    def step(self, k: int) -> Trace:
        """The trace of decoding step k (from 0): the decoder read <bos> (or the prompt) + the first k answer tokens.

        Only the last step's trace is kept (a run at the largest shape would otherwise hold hundreds
        of MB); under the look-ahead mask its first k + 1 positions are what step k computed.
        """
        if not 0 <= k < self.n_steps:
            raise ValueError(f"step {k} does not exist: this run decoded {self.n_steps} steps "
                             f"(0 to {self.n_steps - 1}).")
        return self.trace.target_prefix(self.prompt_len + k)


def pad_ids(ids: torch.Tensor, tokens: tuple[str, ...], length: int, pad_id: int) -> tuple[torch.Tensor, tuple]:
    """Right-pad (1, seq_len) ids and their display tokens with <pad> up to `length`, as a batch would."""
    extra = max(0, length - ids.shape[1])
    return F.pad(ids, (0, extra), value=pad_id), tokens + (Vocab.PAD,) * extra  # (1, length)


def run_seq2seq_text(model: Transformer, task: Task, src_text: str, tgt_text: str | None = None,
                     max_new_tokens: int | None = None, pad_to: int = 0, intervention: Intervention | None = None,
                     sampling: Sampling | None = None) -> TextRun:
    """Run `src_text` (and `tgt_text`, if given, with teacher forcing) through `model` with a trace.

    `pad_to` right-pads the source (and a teacher-forced target) with <pad> to that many
    positions, to show what the padding mask does. Raises ValueError with a readable
    sentence for text that is not a str, empty or too long; unknown tokens become <unk> and
    are listed in `unknown`. The model runs under `intervention` (None: none). Without a target, the
    answer is decoded greedily, or drawn as `sampling` says (temperature 0: greedy, kept as None).
    """
    if not is_whole(pad_to) or pad_to < 0:
        raise ValueError(f"pad_to must be a whole number of positions (0 for no padding), got {pad_to!r}.")
    if tgt_text is not None:  # "" asks for greedy decoding, as None does; 0 or b"" are mistakes
        check_text(task, tgt_text, None, "target")
    max_len = model.config.max_len
    pad_to = min(pad_to, max_len)
    source = encode_source(task, src_text, max_len)
    src_ids, src_tokens = pad_ids(source.ids, source.tokens, pad_to, model.config.pad_id)
    if tgt_text:
        target = encode_target(task, tgt_text, max_len)
        tgt_ids, tgt_tokens = pad_ids(target.ids, target.tokens, pad_to, model.config.pad_id)
        _, trace = model.run_with_trace(src_ids, tgt_ids, intervention)
        return TextRun(trace.with_tokens(src_tokens, tgt_tokens), None, (), 0, source.unknown + target.unknown)

    vocab = task.tgt_vocab
    limit = max_len - 1 if max_new_tokens is None else max_new_tokens
    sampling = None if sampling is None or (isinstance(sampling, Sampling) and sampling.greedy) else sampling
    tgt_ids, (last,) = model.generate(src_ids, limit, vocab.bos_id, vocab.eos_id, keep_steps=False,
                                      intervention=intervention, sampling=sampling)
    tokens = vocab.decode(tgt_ids[0])  # <bos> + generated, possibly ending with <eos>
    answer = tokens[1:-1] if tokens[-1] == vocab.EOS else tokens[1:]
    # The last step read <bos> + the whole answer but its last token: its trace holds every step's (TextRun.step).
    n_steps = len(tokens) - 1
    return TextRun(last.with_tokens(src_tokens, tokens[:n_steps]), task.join(answer), tuple(tokens[1:]), n_steps,
                   source.unknown, sampling)


def run_lm_text(model: DecoderOnlyTransformer, task: Task, src_text: str, tgt_text: str | None = None,
                max_new_tokens: int | None = None, pad_to: int = 0, intervention: Intervention | None = None,
                sampling: Sampling | None = None) -> TextRun:
    """`run_seq2seq_text` for a decoder-only model: the prompt (data/tasks/lm.py) continued by its answer, given
    (teacher forcing) or decoded; one trace over both, its display tokens the decoder's (`tgt_tokens`; no source)."""
    if not is_whole(pad_to) or pad_to < 0:
        raise ValueError(f"pad_to must be a whole number of positions (0 for no padding), got {pad_to!r}.")
    prompt, vocab, max_len = encode_prompt(task, src_text), lm_vocab(task), model.config.max_len
    prompt_len = prompt.ids.shape[1]
    if tgt_text:
        target = encode_target(task, tgt_text, max_len=max_len - prompt_len)  # what fits after the prompt
        ids = torch.tensor([sequence(task, prompt.pieces, target.pieces)[0]])  # (1, length)
        ids, tokens = pad_ids(ids, tuple(vocab.decode(ids[0])), min(pad_to, max_len), model.config.pad_id)
        _, trace = model.run_with_trace(ids, intervention)
        return TextRun(trace.with_tokens(None, tokens), None, (), 0, prompt.unknown + target.unknown,
                       prompt_len=prompt_len)
    sampling = None if sampling is None or (isinstance(sampling, Sampling) and sampling.greedy) else sampling
    limit = task.max_target_len + 1 if max_new_tokens is None else max_new_tokens
    if task.lm_form == "continue":
        limit = min(limit, len(task.target_tokens(prompt.pieces)))
    ids, (last,) = model.generate(prompt.ids, limit, vocab.eos_id, keep_steps=False, intervention=intervention,
                                  sampling=sampling)
    tokens = vocab.decode(ids[0])  # the prompt + what was generated, possibly ending with <eos>
    answer = answer_of(task, ids[0].tolist(), prompt_len)
    n_steps = len(tokens) - prompt_len
    # The last step read everything but the last token: its trace holds every step's (TextRun.step).
    return TextRun(last.with_tokens(None, tuple(tokens[:-1])), task.join(answer), tuple(tokens[prompt_len:]),
                   n_steps, prompt.unknown, sampling, prompt_len=prompt_len)
