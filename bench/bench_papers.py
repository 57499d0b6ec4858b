"""Published tables reproduced on the shipped toy models: `python bench/bench_papers.py [--inputs N] [--write]`.

Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers" (`abnar_tables`; analysis/agreement.py), on
en-fr (an encoder-decoder: the French article agrees with a noun elsewhere in the sentence, as their verb agreed
with its subject) and the decoder-only reverse-gpt and sort-gpt (one stack, as their encoder): Spearman ρ between
raw attention, rollout and flow at each layer and leave-one-out / the gradient's norm, for the first answer token
of 200 fresh inputs; and Kobayashi et al. 2020's check, the share of weight vs of norm on <bos>/<eos>.

Michel, Levy & Neubig 2019, "Are Sixteen Heads Really Better than One?" (`michel_tables`; the measures are in
transformer_viz/train/pruning.py), on the en-fr and reverse encoder-decoders (2 layers, 4 heads: 24 heads), each
scored by exact match (EM) of greedy answers and teacher-forced token accuracy (TF) on N fresh held-out inputs:
  (a) every head ablated alone: which change EM or TF beyond a 95 % paired bootstrap interval, and which way;
  (b) every head of a layer but one ablated, the one kept chosen on N other inputs;
  (c) heads pruned 10 %, 20 %, ... at a time, least important first, by their importance I_h (gradient of the
      loss by a gate on the head, on N other inputs), beside two other orders: by ΔL, the loss's measured change
      when the head alone is ablated (what I_h estimates to first order), and at random.
Their numbers (WMT En-Fr, 6 layers of 16 heads, BLEU) are printed beside ours.

Runtime on this 2-core machine, --inputs 500 (the default), 2026-11-26, while other work kept the load average at
about 2.3: 137 s and 145 s wall (113-116 s CPU) at 1 thread, as `recommended_threads` chose; a first version at
torch's default 2 threads, under a load average of 3.8, took 699 s. Every run prints the same numbers (seeded
numpy Generators and random.Random; torch's global RNG is neither seeded nor drawn from).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from scipy.stats import spearmanr

from transformer_viz.analysis.agreement import (
    APPROXIMATIONS,
    REFERENCES,
    AgreementTable,
    agreement_table,
    special_token_shares,
)
from transformer_viz.analysis.agreement import PUBLISHED as ABNAR_PUBLISHED
from transformer_viz.figures.papers import MEASURED
from transformer_viz.train.evaluation import evaluate
from transformer_viz.train.loop import recommended_threads
from transformer_viz.train.pruning import (
    PUBLISHED,
    Ablated,
    Change,
    heads_of,
    importance,
    loss_changes,
    normalised_by_layer,
    one_head_per_layer,
    pruning_curve,
    pruning_order,
    single_heads,
)
from transformer_viz.weights.pretrained import load_pretrained

EVALUATION_SEED, SELECTION_SEED, IMPORTANCE_SEED = 7, 8, 9  # three disjoint draws of held-out inputs
FRACTIONS = tuple(step / 10 for step in range(11))
KIND_WORDS = {"encoder_self": "enc self", "decoder_self": "dec self", "cross": "cross"}
MICHEL_A = ("WMT En-Fr encoder self-attention: {significant} of {heads} heads change BLEU significantly (p < 0.01), "
            "{better} of them up").format(**PUBLISHED["single"])
MICHEL_B = ("WMT: most layers unaffected by keeping one head; the last encoder-decoder (cross) layer "
            f"{PUBLISHED['last_cross_one_head']:+.2f} BLEU")
MICHEL_C = (f"{PUBLISHED['prunable']['WMT']:.0%} of WMT's heads ({PUBLISHED['prunable']['BERT']:.0%} of BERT's "
            "on MNLI) pruned without noticeable loss")


def head_label(head: tuple[str, int, int]) -> str:
    """("cross", 1, 0) -> "cross L2 H1" (1-based, as the app says)."""
    kind, layer, index = head
    return f"{KIND_WORDS[kind]} L{layer + 1} H{index + 1}"


def change_text(change: Change) -> str:
    """A change in percentage points with its interval, starred when the interval excludes 0."""
    star = "*" if change.direction else " "
    return f"{100 * change.delta:+6.1f} [{100 * change.low:+6.1f}, {100 * change.high:+6.1f}]{star}"


def print_single(rows: list[Ablated], scores: dict, changes: dict) -> None:
    print(f"(a) one head ablated; * = the 95 % interval excludes 0.  Theirs: {MICHEL_A}.")
    print("    I_h: importance (mean |dL/dξ_h|, not normalised); ΔL: the mean loss's change when it is ablated.")
    print(f"    {'head':<16} {'EM':>6}  {'ΔEM, points [95 %]':<25} {'TF':>6}  {'ΔTF, points [95 %]':<25} "
          f"{'I_h':>8} {'ΔL':>9}")
    for row in rows:
        (head,) = row.heads
        print(f"    {head_label(head):<16} {row.exact_match:6.1%}  {change_text(row.exact):<25} "
              f"{row.token_accuracy:6.1%}  {change_text(row.token):<25} {scores[head]:8.1e} {changes[head]:+9.1e}")
    for kind, word in KIND_WORDS.items():
        mine = [row for row in rows if next(iter(row.heads))[0] == kind]
        counts = [sum(getattr(row, score).direction == way for row in mine)
                  for score in ("exact", "token") for way in (-1, 1)]
        print(f"    {word:<9} {len(mine)} heads: EM {counts[0]} worse, {counts[1]} better; "
              f"TF {counts[2]} worse, {counts[3]} better")
    heads = list(scores)
    rho = spearmanr([scores[h] for h in heads], [changes[h] for h in heads]).statistic
    print(f"    Spearman ρ(I_h, ΔL) over the {len(heads)} heads: {rho:+.2f}")


def print_per_layer(rows: list[tuple[tuple[str, int, int], Ablated]], layers: int) -> None:
    print(f"(b) all heads of a layer but one ablated.  Theirs: {MICHEL_B}.")
    print(f"    {'layer':<12} {'kept':<4} {'EM':>6}  {'ΔEM, points [95 %]':<25} {'TF':>6}  {'ΔTF, points [95 %]':<25}")
    for kept, row in rows:
        kind, layer, head = kept
        last = " (last)" if kind == "cross" and layer == layers - 1 else ""
        print(f"    {KIND_WORDS[kind] + f' L{layer + 1}':<12} H{head + 1:<3} {row.exact_match:6.1%}  "
              f"{change_text(row.exact):<25} {row.token_accuracy:6.1%}  {change_text(row.token):<25}{last}")


def print_pruning(curves: dict[str, list[tuple[float, Ablated]]]) -> None:
    print(f"(c) heads pruned, least important first: EM (TF).  Theirs: {MICHEL_C}.")
    print("    " + f"{'pruned':<13}" + "".join(f"{name:<24}" for name in curves))
    for step, fraction in enumerate(FRACTIONS):
        cells = [f"{row.exact_match:6.1%} ({row.token_accuracy:6.1%}){'*' if row.exact.direction else ' '}"
                 for _, row in (curve[step] for curve in curves.values())]
        heads = len(next(iter(curves.values()))[step][1].heads)
        print("    " + f"{fraction:4.0%} ({heads:2d})  " + "".join(f"{cell:<24}" for cell in cells))
    kept = {name: max((fraction for fraction, _ in curve[: first_drop(curve)]), default=0.0)
            for name, curve in curves.items()}
    print("    pruned before EM first drops beyond noise (*): "
          + ", ".join(f"{name} {fraction:.0%}" for name, fraction in kept.items()))


def first_drop(curve: list[tuple[float, Ablated]]) -> int:
    """The index of the first fraction whose exact match is significantly below the whole model's."""
    return next((i for i, (_, row) in enumerate(curve) if row.exact.direction < 0), len(curve))


def orders(scores: dict, changes: dict, heads: list, seed: int) -> dict[str, list]:
    """The pruning orders of (c): I_h normalised by layer (theirs), I_h raw, ΔL, random."""
    shuffled = np.random.default_rng(seed).permutation(len(heads))
    return {"I_h by layer (theirs)": pruning_order(normalised_by_layer(scores)),
            "I_h raw": pruning_order(scores),
            "ΔL alone": pruning_order(changes),
            "random": [heads[i] for i in shuffled]}


def michel_tables(args: argparse.Namespace) -> dict:
    """Michel et al. 2019's three experiments on each of `args.models`, printed beside their numbers; returns
    {model: its results as plain JSON values}."""
    results = {}
    for name in args.models:
        pretrained = load_pretrained(name)
        model, task = pretrained.model, pretrained.task
        rng = np.random.default_rng(args.seed)
        base = evaluate(model, task, n=args.inputs, seed=EVALUATION_SEED)
        config = model.config
        print(f"\n=== {name}: {config.n_encoder_layers} + {config.n_decoder_layers} layers of {config.n_heads} "
              f"heads ({len(heads_of(config))} heads); whole model on {args.inputs} inputs: "
              f"EM {base.exact_match:.1%}, TF {base.teacher_forced_accuracy:.1%}")
        scores = importance(model, task, n=args.inputs, seed=IMPORTANCE_SEED)
        changes = loss_changes(model, task, n=args.inputs, seed=IMPORTANCE_SEED)
        single = single_heads(model, task, base, rng)
        print_single(single, scores, changes)
        per_layer = one_head_per_layer(model, task, base, rng, SELECTION_SEED)
        print_per_layer(per_layer, config.n_decoder_layers)
        curves = {label: pruning_curve(model, task, order, FRACTIONS, base, rng)
                  for label, order in orders(scores, changes, heads_of(config), args.seed).items()}
        print_pruning(curves)
        results[name] = {
            "inputs": args.inputs, "exact_match": base.exact_match, "token_accuracy": base.teacher_forced_accuracy,
            "single": [row.to_dict() | {"importance": scores[head], "loss_change": changes[head]}
                       for row, head in zip(single, heads_of(config), strict=True)],
            "one_head": [{"kept": list(kept)} | row.to_dict() for kept, row in per_layer],
            "pruning": {label: [{"fraction": fraction} | row.to_dict() for fraction, row in curve]
                        for label, curve in curves.items()}}
    return results


ABNAR_MODELS = ("en-fr", "reverse-gpt", "sort-gpt")  # en-fr: an article agrees with a noun elsewhere, like their verb


def abnar_table(name: str, table: AgreementTable) -> None:
    """Our mean ρ per layer beside Abnar & Zuidema's Tables 1 and 2 (their layers 1, 3 and 6)."""
    ours = " ".join(f"  ours L{layer}" for layer in range(1, table.layers + 1))
    print(f"\n{name}: {table.inputs} fresh inputs, the first answer token; Spearman ρ")
    print(f"{'':26s}{ours}    theirs L1  L3    L6")
    for reference in REFERENCES:
        for method in APPROXIMATIONS:
            mine = " ".join(f"{table.rho[reference][method][layer]:+9.2f}" for layer in range(1, table.layers + 1))
            theirs = ABNAR_PUBLISHED[reference][method]
            print(f"{method:>9s} vs {reference:13s}{mine}    {theirs[0]:+.2f} {theirs[2]:+.2f} {theirs[5]:+.2f}")


def abnar_tables(args) -> dict:
    """Abnar & Zuidema's Spearman table on ABNAR_MODELS, and Kobayashi's weight vs norm on <bos>/<eos>."""
    results: dict = {"abnar": {}, "kobayashi": {}}
    print(f"\n=== Abnar & Zuidema 2020: Spearman ρ of attention, rollout and flow with leave-one-out and the "
          f"gradient's norm ({args.abnar_inputs} inputs) ===")
    for name in ABNAR_MODELS:
        pretrained = load_pretrained(name)
        table = agreement_table(pretrained.model, pretrained.task, n=args.abnar_inputs)
        abnar_table(name, table)
        results["abnar"][name] = table.to_dict()
        shares = special_token_shares(pretrained.model, pretrained.task)
        results["kobayashi"][name] = shares
        print("  Kobayashi: share on <bos>/<eos> by layer, weight vs norm: " +
              ", ".join(f"L{i + 1} {w:.2f} vs {n:.2f}" for i, (w, n) in enumerate(shares)))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=500, help="held-out inputs per evaluation (default 500)")
    parser.add_argument("--models", nargs="+", default=["en-fr", "reverse"], help="shipped encoder-decoders")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of the random order")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: the cores the load average leaves free, at most 2)")
    parser.add_argument("--abnar-inputs", type=int, default=200,
                        help="fresh inputs per model for Abnar & Zuidema's table (default 200; 0 skips it)")
    parser.add_argument("--write", action="store_true",
                        help=f"store the results where the app's page reads them ({MEASURED.name})")
    args = parser.parse_args(argv)
    if args.inputs < 1:
        parser.error("--inputs must be at least 1")
    torch.set_num_threads(recommended_threads() if args.threads is None else args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} cores, "
          f"load average {load:.2f}; {args.inputs} inputs per evaluation")
    wall, cpu = time.perf_counter(), time.process_time()
    results = abnar_tables(args) if args.abnar_inputs else {}
    results["michel"] = michel_tables(args)
    if args.write:
        results["measured"] = dict(inputs=args.inputs, abnar_inputs=args.abnar_inputs, torch=torch.__version__)
        results["michel_published"] = PUBLISHED
        MEASURED.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(f"\nwritten to {MEASURED}")
    print(f"\nruntime: {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU "
          f"(Abnar & Zuidema: {', '.join(ABNAR_MODELS) if args.abnar_inputs else 'skipped'}; "
          f"Michel et al.: {', '.join(args.models)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
