"""The lines of the project's own model code that compute a step, read from the running source (not a copy).

`head_step_code("scale")` is the function of model/attention.py that divides the scores by √d_head, with that
line marked: the picture of a step and the code that made its numbers, side by side.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from transformer_viz.model.attention import MultiHeadAttention, masked_softmax, scaled_dot_product_attention
from transformer_viz.model.layers import ResidualBlock

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CodeExcerpt:
    """Lines of one function of the package, some of them marked (the step's own)."""

    path: str  # the module's file, from the repository's root: "transformer_viz/model/attention.py"
    name: str  # the function's qualified name: "scaled_dot_product_attention"
    first_line: int  # the file's line number of lines[0]
    lines: tuple[str, ...]
    marked: tuple[int, ...]  # indices into `lines`

    @property
    def marked_line_numbers(self) -> tuple[int, ...]:
        return tuple(self.first_line + index for index in self.marked)


# Each step of one head -> the function that computes it and the beginnings of its lines (stripped), in order.
HEAD_STEP_CODE: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "x": (ResidualBlock.residual, ("return x + self.dropout(sublayer(norm(x)))",  # pre-LN, then post-LN
                                   "return norm(x + self.dropout(sublayer(x)))")),
    "projections": (MultiHeadAttention.forward, ("q = self.hook_q(", "k = self.hook_k(", "v = self.hook_v(")),
    "rotate": (MultiHeadAttention.forward, ("angles = rotary_angles(", "q, k = self.hook_q_rot(")),
    "qk": (scaled_dot_product_attention, ("scores = q @ k.transpose(-2, -1)",)),
    "scale": (scaled_dot_product_attention, ("scores = scores / math.sqrt(q.shape[-1])",)),
    "mask": (masked_softmax, ("masked_scores = scores.masked_fill(~mask",)),
    "softmax": (masked_softmax, ("weights = masked_scores.softmax(dim=-1)",)),
    "weighted_sum": (scaled_dot_product_attention, ("return attended @ v",)),
    "concat": (MultiHeadAttention.forward, ("merged = context.transpose(1, 2)",)),
    "output": (MultiHeadAttention.forward, ("return self.hook_out(self.out_proj(merged))",)),
}


@functools.cache  # the running source does not change; inspect finds it in ~1 ms (Inside one head asks ten times a run)
def code_excerpt(function: Callable, beginnings: tuple[str, ...]) -> CodeExcerpt:
    """`function`'s source with the lines that begin (after indentation) with one of `beginnings` marked.

    Raises LookupError when a beginning is not on exactly one line: the code changed, and the mapping must too
    (a wrong line marked would be a lie)."""
    lines, first_line = inspect.getsourcelines(function)
    lines = tuple(line.rstrip("\n") for line in lines)
    marked = []
    for beginning in beginnings:
        found = [index for index, line in enumerate(lines) if line.strip().startswith(beginning)]
        if len(found) != 1:
            raise LookupError(f"{function.__qualname__}: {len(found)} lines begin with {beginning!r}")
        marked.append(found[0])
    path = Path(inspect.getsourcefile(function)).resolve().relative_to(PACKAGE_ROOT).as_posix()
    return CodeExcerpt(path, function.__qualname__, first_line, lines, tuple(sorted(marked)))


def head_step_code(step: str, norm_first: bool = True) -> CodeExcerpt:
    """The code of one step of the Inside-one-head walkthrough ("x", "projections", "qk", ..., "output"); the
    input X is the LayerNorm's output in a pre-LN model (`norm_first`), the layer's input in a post-LN one."""
    if step not in HEAD_STEP_CODE:
        raise ValueError(f"no step {step!r}; the steps are {', '.join(HEAD_STEP_CODE)}")
    function, beginnings = HEAD_STEP_CODE[step]
    if step == "x":
        beginnings = beginnings[:1] if norm_first else beginnings[1:]
    return code_excerpt(function, beginnings)
