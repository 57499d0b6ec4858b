"""Is attention an explanation? Every method's scores of the input tokens for one output token.

For the token a model predicts at one decoder position, each input token (the source's; a decoder-only
model's tokens up to that position) gets a score from:

- attention: the head-mean attention weights of each layer (cross-attention in an encoder-decoder);
- rollout and flow through layers 1..l (analysis/flow.py, Abnar & Zuidema 2020);
- value-weighted norms ‖Σ_h α_h·f_h(x)‖ of each layer, f_h(x) the head's value vector through its slice of
  W_O (Kobayashi et al. 2020): a weight times the size of what it carries;
- the gradient of the token's log-probability with respect to each token embedding: its norm ("saliency",
  Abnar & Zuidema's input gradients), and gradient × input and integrated gradients, summed over the
  embedding's dimensions (all three by Captum, PyTorch's attribution library);
- leave-one-out: how much the log-probability falls when that token alone is replaced by <unk> (one batched
  forward pass).

All but leave-one-out are approximations of "what the model used", and leave-one-out is itself a change of
input the model never saw in training. The methods needing the weights or gradients run on this project's
models; a trace alone (a Hugging Face model) gets the attention-only methods. Not every output token is worth
explaining: `telling_output` chooses one whose leave-one-out is more than rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from transformer_viz.analysis.architecture import Architecture, architecture_of
from transformer_viz.analysis.flow import LayerGraph, attention_flow, rollout
from transformer_viz.config import is_whole
from transformer_viz.data.tasks import Task
from transformer_viz.data.vocab import Vocab
from transformer_viz.model.hooks import intervening
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace, recorded_attention

LAYERED = ("attention", "rollout", "flow", "value_norm")  # one score per layer: ids "<method>.<layer from 1>"
MODEL_METHODS = ("gradient", "grad_input", "integrated_gradients", "leave_one_out")  # need the model, not just a trace
IG_STEPS = 64  # integrated gradients' points on the path from the zero embedding (Gauss-Legendre)
# Leave one out subtracts two float32 log-probabilities. For a token the model is sure of, log p = −log(1 + Σ_j
# e^(x_j − x_y)) rounds at float32's epsilon (1.2e-7): on the examples of the shipped en-fr, en-zh, reverse,
# reverse-gpt and sort models, the float32 rows of such tokens differed from float64's by up to 3.4e-7. A row whose
# largest score is under 1e-5, some 30 such roundings, ranks rounding, not the model (the <eos> after a finished
# sentence scores about 1e-7). The gradient methods are not judged by it: they subtract no log-probabilities, and on
# en-fr's first example their float32 values matched float64's within 1 % for every word, even at 2e-6 (not at
# the final <eos>, where leave one out is noise too).
NOISE = {"leave_one_out": 1e-5}  # method -> the largest |score| that is still rounding


@dataclass(frozen=True)
class Attribution:
    """The scores of `tokens` for the token `output` predicted at decoder position `position`."""

    tokens: tuple[str, ...]  # the inputs scored: the source's tokens, or a decoder-only model's up to `position`
    position: int
    output: str
    probability: float  # the model's probability of `output` there
    scores: dict[str, np.ndarray]  # method id ("attention.2", "flow.1", "leave_one_out", ...) -> (n_tokens,)
    heads: dict[str, np.ndarray] = field(default_factory=dict)  # "attention.l"/"value_norm.l" -> (heads, n_tokens)
    ig_delta: float = float("nan")  # Captum's completeness gap: Σ attributions − (f(x) − f(0))

    def below_noise(self, method: str) -> bool:
        """Whether every score of `method` is within float32's rounding (NOISE): nothing there to rank."""
        return method in NOISE and float(np.abs(self.scores[method]).max(initial=0.0)) < NOISE[method]

    def correlations(self, reference: str = "leave_one_out") -> dict[str, float]:
        """Spearman's ρ between each method and `reference` (NaN where either is constant or below noise)."""
        return {method: float("nan") if self.below_noise(reference) or self.below_noise(method)
                else rank_correlation(scores, self.scores[reference])
                for method, scores in self.scores.items() if method != reference}

    @property
    def last_attention(self) -> str:
        """The method id of the last layer's attention ("attention.2" in a two-layer model)."""
        return f"attention.{sum(method.startswith('attention.') for method in self.scores)}"


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two score vectors; NaN when either has no spread."""
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    from scipy.stats import spearmanr  # here: scipy.stats takes ~1.3 s to load, and only this page's figures ask

    return float(spearmanr(a, b).statistic)


def _layered_attention(trace: Trace, kind: str, position: int, inputs: slice) -> dict[str, np.ndarray]:
    """Per layer: the weights of each head from `position` to the inputs -> {"attention.l": (heads, n)}."""
    return {f"attention.{layer + 1}": recorded_attention(trace, kind, layer, "weights")[0, :, position, inputs]
            .double().numpy() for layer in range(trace.n_layers(kind))}


def weighted_values(model, trace: Trace, kind: str, layer: int, position: int) -> torch.Tensor:
    """What each head moves from each key to `position` in `layer` (from 0): α_h·f_h(x_j), f_h(x) = v_h(x)·W_O,hᵀ
    -> (heads, k_len, d_model). Summed over heads and keys, plus W_O's bias, it is the sublayer's output there."""
    weights = recorded_attention(trace, kind, layer, "weights")[0, :, position].double()  # (heads, k_len)
    values = trace[attention_name(kind, layer, "v")][0].double()  # (heads, k_len, d_head)
    stack = model.encoder if kind == "encoder_self" else model.decoder
    sublayer = "cross_attn" if kind == "cross" else "self_attn"
    w_out = getattr(stack.layers[layer], sublayer).out_proj.weight.detach().double()  # (d_model, heads·d_head)
    heads, _, d_head = values.shape
    transformed = torch.einsum("hkd,mhd->hkm", values, w_out.view(-1, heads, d_head))  # (heads, k_len, d_model)
    return weights[..., None] * transformed


def value_norms(model, trace: Trace, kind: str, layer: int, position: int) -> tuple[np.ndarray, np.ndarray]:
    """Kobayashi et al.'s norms: per head ‖α_h·f_h(x_j)‖ (heads, k_len) and summed ‖Σ_h α_h·f_h(x_j)‖ (k_len,)."""
    weighted = weighted_values(model, trace, kind, layer, position)  # (heads, k_len, d_model)
    return weighted.norm(dim=-1).numpy(), weighted.sum(0).norm(dim=-1).numpy()


@dataclass(frozen=True)
class _Inputs:
    """The inputs of one run, which positions of the first (the embedded one) are scored, and how the model runs
    on them (its Architecture)."""

    architecture: Architecture
    ids: tuple[torch.Tensor, ...]  # the model's inputs, (1, length) each; the first is embedded and scored
    scored: slice
    unk_id: int

    def logits(self, model, token: torch.Tensor | None = None, ids: torch.Tensor | None = None) -> torch.Tensor:
        """Run the model on `ids` (default: the run's) for the embedded input, with `token` as its token
        embeddings (batch, len, d_model) if given -> logits (batch, tgt_len, vocab)."""
        batch = len(token) if token is not None else (len(ids) if ids is not None else 1)
        first = (self.embedded_ids if ids is None else ids).expand(batch, -1)
        rest = tuple(other.expand(batch, -1) for other in self.ids[1:])
        return self.architecture.logits_with(model, (first, *rest), token)

    @property
    def embedded_ids(self) -> torch.Tensor:
        return self.ids[0]


def _inputs(model, task: Task, trace: Trace, position: int) -> _Inputs:
    architecture = architecture_of(model)
    return _Inputs(architecture, architecture.input_ids(task, trace), trace.form.visible_inputs(trace, position),
                   architecture.input_vocab(task).index(Vocab.UNK))


def gradient_scores(model, inputs: _Inputs, position: int, token_id: int) -> tuple[dict[str, np.ndarray], float]:
    """Per scored token, of log p(token_id) at `position`: the gradient's norm ‖∇‖ (saliency), gradient × input
    and integrated gradients from the zero embedding, both summed over the embedding
    -> ({"gradient", "grad_input", "integrated_gradients"}: (n,)), IG's convergence delta)."""
    # Captum loads matplotlib, IPython and scipy (~1.3 s): only once gradients are asked for, not with every lesson.
    from captum.attr import InputXGradient, IntegratedGradients, Saliency

    embedded = inputs.architecture.input_table(model)(inputs.embedded_ids).detach()  # (1, len, d_model)

    def log_probability(token: torch.Tensor) -> torch.Tensor:  # (batch, len, d_model) -> (batch,)
        return inputs.logits(model, token)[:, position].log_softmax(-1)[:, token_id]

    with torch.inference_mode(False), torch.enable_grad():
        gradient = Saliency(log_probability).attribute(embedded.clone().requires_grad_(), abs=True).norm(dim=-1)
        grad_input = InputXGradient(log_probability).attribute(embedded.clone().requires_grad_()).sum(-1)
        integrated, delta = IntegratedGradients(log_probability).attribute(
            embedded.clone().requires_grad_(), baselines=torch.zeros_like(embedded), n_steps=IG_STEPS,
            internal_batch_size=IG_STEPS, return_convergence_delta=True)
    scores = dict(gradient=gradient, grad_input=grad_input, integrated_gradients=integrated.sum(-1))
    return {method: values[0, inputs.scored].detach().double().numpy() for method, values in scores.items()}, \
        float(delta.item())


def leave_one_out(model, inputs: _Inputs, position: int, token_id: int) -> np.ndarray:
    """log p(token_id) at `position` minus the same with one scored token replaced by <unk>, for each -> (n,)."""
    positions = torch.arange(inputs.scored.start, inputs.scored.stop)
    blanked = inputs.embedded_ids.repeat(len(positions) + 1, 1)  # row 0 is the run itself
    blanked[torch.arange(1, len(positions) + 1), positions] = inputs.unk_id
    with torch.inference_mode():
        log_p = inputs.logits(model, ids=blanked)[:, position].log_softmax(-1)[:, token_id].double()
    return (log_p[0] - log_p[1:]).numpy()


def telling_output(results: Sequence[Attribution]) -> Attribution:
    """The output token worth explaining, of `results` (one per decoder position, in order). Of the words (not
    <eos>, <pad> or another special token) whose leave one out is more than rounding (NOISE), the first whose last
    attention layer's brightest input is not the one whose leaving out hurts most, else the first of them; without
    leave one out (a trace alone), the first word; the first result when none is a word."""
    if not results:
        raise ValueError("There is no output token to choose from.")
    words = [result for result in results if result.output not in Vocab.SPECIALS]
    measured = [result for result in words
                if "leave_one_out" in result.scores and not result.below_noise("leave_one_out")]
    disagreeing = [result for result in measured if np.argmax(result.scores[result.last_attention])
                   != np.argmax(result.scores["leave_one_out"])]
    return (disagreeing or measured or words or results)[0]


def _predicted(trace: Trace, position: int) -> tuple[int, float]:
    """The id of the token the model finds most probable at decoder `position` (batch item 0), and its
    probability."""
    if not is_whole(position):
        raise ValueError(f"position must be a whole number (a decoder position), got {position!r}.")
    if not 0 <= position < trace["logits"].shape[1]:
        raise ValueError(f"position {position} is not a decoder position (0 to {trace['logits'].shape[1] - 1}).")
    probabilities = trace["logits"][0, position].double().softmax(-1)  # (vocab,)
    token_id = int(probabilities.argmax())
    return token_id, float(probabilities[token_id])


def attention_and_leave_one_out(trace: Trace, position: int, output_vocab, model=None,
                                task: Task | None = None) -> Attribution:
    """Each layer's attention and (with `model` and its `task`) leave one out, for the token the model finds most
    probable at decoder `position`: the quick methods, all `telling_output` needs. Arguments as `explain`'s."""
    token_id, probability = _predicted(trace, position)
    kind, scored = trace.form.aligning_kind, trace.form.visible_inputs(trace, position)
    heads = _layered_attention(trace, kind, position, scored)
    scores = {method: weights.mean(0) for method, weights in heads.items()}
    if model is not None:
        with intervening(trace.intervention):
            scores["leave_one_out"] = leave_one_out(model, _inputs(model, task, trace, position), position, token_id)
    return Attribution(tokens=tuple(trace.form.aligned_keys(trace)[scored]), position=position,
                       output=output_vocab[token_id], probability=probability, scores=scores, heads=heads)


def explain(trace: Trace, position: int, output_vocab, model=None, task: Task | None = None) -> Attribution:
    """Every method's scores for the token the model finds most probable at decoder `position` (batch item 0).

    `output_vocab` names the output ids. With `model` (this project's, with its `task`) also the value norms,
    the gradient methods and leave-one-out, run under the trace's intervention; without, the attention-only
    methods (a Hugging Face trace).
    """
    quick = attention_and_leave_one_out(trace, position, output_vocab, model, task)
    scores, heads = dict(quick.scores), dict(quick.heads)
    graph = LayerGraph.of(trace)
    kind, scored = trace.form.aligning_kind, trace.form.visible_inputs(trace, position)
    for layer in range(1, len(graph.decoder) + 1):
        for method, function in (("rollout", rollout), ("flow", attention_flow)):
            scores[f"{method}.{layer}"] = function(graph, position, layer)[graph.input_nodes][scored]
    if model is None:
        return replace(quick, scores=scores)
    for layer in range(trace.n_layers(kind)):
        per_head, summed = value_norms(model, trace, kind, layer, position)
        heads[f"value_norm.{layer + 1}"], scores[f"value_norm.{layer + 1}"] = per_head[:, scored], summed[scored]
    token_id, _ = _predicted(trace, position)
    with intervening(trace.intervention):
        gradients, delta = gradient_scores(model, _inputs(model, task, trace, position), position, token_id)
    return replace(quick, scores=scores | gradients, heads=heads, ig_delta=delta)
