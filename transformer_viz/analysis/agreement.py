"""Abnar & Zuidema (2020), Table 1 on this project's models: how well raw attention, attention rollout and
attention flow at each layer rank the input tokens the way leave-one-out ("blank-out") and input gradients do.

For each of `n` fresh held-out inputs, teacher-forced, the first answer token is explained (analysis/attribution.py)
and Spearman's ρ is taken between each attention-based row and each reference over the scored input tokens;
the table holds the mean ρ over the inputs where both rows have any spread. Their model was a 6-layer encoder
classifying subject–verb agreement (the verb's number depends on one noun among several); ours has 2 layers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from transformer_viz.analysis.architecture import architecture_of
from transformer_viz.analysis.attribution import explain, rank_correlation, value_norms
from transformer_viz.analysis.inference import run_text
from transformer_viz.data.tasks import Task
from transformer_viz.data.vocab import Vocab
from transformer_viz.trace.record import recorded_attention

APPROXIMATIONS = ("attention", "rollout", "flow")
REFERENCES = ("leave_one_out", "gradient")  # Abnar & Zuidema's blank-out and input gradients (the gradient's norm)
# Their Tables 1 and 2 (6-layer encoder, subject-verb agreement, 2000 inputs): mean ρ at layers 1 to 6.
PUBLISHED = {
    "leave_one_out": {"attention": (0.69, 0.10, -0.11, -0.09, 0.20, 0.29),
                      "rollout": (0.32, 0.38, 0.51, 0.62, 0.70, 0.71),
                      "flow": (0.32, 0.44, 0.70, 0.70, 0.71, 0.70)},
    "gradient": {"attention": (0.53, 0.16, -0.06, 0.00, 0.24, 0.46),
                 "rollout": (0.22, 0.27, 0.39, 0.47, 0.53, 0.54),
                 "flow": (0.22, 0.31, 0.54, 0.61, 0.60, 0.61)},
}


@dataclass(frozen=True)
class AgreementTable:
    """Mean Spearman ρ by (reference, method, layer from 1), over `inputs` inputs (`counted` had spread)."""

    task: str
    inputs: int
    layers: int
    rho: dict[str, dict[str, dict[int, float]]]
    counted: dict[str, dict[str, dict[int, int]]]

    def to_dict(self) -> dict:
        def keyed(table):  # JSON keys are text
            return {ref: {m: {str(k): v for k, v in by_layer.items()} for m, by_layer in rows.items()}
                    for ref, rows in table.items()}

        return dict(task=self.task, inputs=self.inputs, layers=self.layers, rho=keyed(self.rho),
                    counted=keyed(self.counted))


def agreement_table(model, task: Task, n: int = 200, seed: int = 11) -> AgreementTable:
    """The table on `n` fresh held-out inputs of `task` (its inputs drawn with `seed`)."""
    rng = random.Random(seed)
    vocab = architecture_of(model).output_vocab(model, task)
    found: dict[tuple[str, str, int], list[float]] = {}
    layers = model.config.n_decoder_layers
    for _ in range(n):
        text = task.heldout_input(rng)
        run = run_text(model, task, text, task.target(text))
        result = explain(run.trace, run.prompt_len - 1, vocab.tokens, model, task)
        for reference in REFERENCES:
            for method in APPROXIMATIONS:
                for layer in range(1, layers + 1):
                    rho = rank_correlation(result.scores[f"{method}.{layer}"], result.scores[reference])
                    found.setdefault((reference, method, layer), []).append(rho)
    rho = {ref: {m: {} for m in APPROXIMATIONS} for ref in REFERENCES}
    counted = {ref: {m: {} for m in APPROXIMATIONS} for ref in REFERENCES}
    for (reference, method, layer), values in found.items():
        defined = np.array([v for v in values if not np.isnan(v)])
        rho[reference][method][layer] = float(defined.mean()) if len(defined) else float("nan")
        counted[reference][method][layer] = len(defined)
    return AgreementTable(task.name, n, layers, rho, counted)


def special_token_shares(model, task: Task, n: int = 100, seed: int = 3) -> list[tuple[float, float]]:
    """Kobayashi et al.'s check, per decoder layer: (the mean share of the attention weight, the mean share of
    ‖Σ_h α_h·f_h(x)‖) that the answer's positions give to <bos> and <eos>, over `n` fresh held-out inputs,
    teacher-forced. In BERT they found large weights but small norms on such tokens."""
    kind = architecture_of(model).form.aligning_kind
    rng = random.Random(seed)
    layers = model.config.n_decoder_layers
    weight_shares, norm_shares = [[] for _ in range(layers)], [[] for _ in range(layers)]
    for _ in range(n):
        text = task.heldout_input(rng)
        run = run_text(model, task, text, task.target(text))
        special = np.array([token in (Vocab.BOS, Vocab.EOS) for token in run.trace.form.aligned_keys(run.trace)])
        for position in range(run.prompt_len - 1, len(run.trace.tgt_tokens) - 1):
            seen = run.trace.form.visible_inputs(run.trace, position)  # the keys it may attend to
            for layer in range(layers):
                summed = value_norms(model, run.trace, kind, layer, position)[1]  # (k_len,)
                weights = mean_weights(run.trace, kind, layer, position)[seen]
                weight_shares[layer].append(weights[special[seen]].sum() / weights.sum())
                norm_shares[layer].append(summed[seen][special[seen]].sum() / summed[seen].sum())
    return [(float(np.mean(w)), float(np.mean(m))) for w, m in zip(weight_shares, norm_shares, strict=True)]


def mean_weights(trace, kind: str, layer: int, position: int) -> np.ndarray:
    """The head-mean attention weights of `position` in `layer` -> (k_len,)."""
    return recorded_attention(trace, kind, layer, "weights")[0, :, position].double().mean(0).numpy()
