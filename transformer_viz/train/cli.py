"""Train a model on a toy task and save it as a checkpoint (into ./checkpoints unless --out says otherwise).

    python -m transformer_viz.train --task reverse                    # ./checkpoints/reverse.{safetensors,json}
    python -m transformer_viz.train --task sort --steps 300 --name quick_sort --out ~/my_weights
    python -m transformer_viz.train --task all --threads 1 --out transformer_viz/weights/shipped   # the shipped models
    python -m transformer_viz.train --task reverse --architecture decoder_only   # GPT's form: ./checkpoints/reverse-gpt

Weights go to `<out>/<name>.safetensors`, metadata with the metrics measured on fresh held-out
inputs to `<out>/<name>.json` (the name defaults to the task's; a decoder-only model's to `<task>-gpt`).
`transformer-viz --checkpoints <out>` lists them in the app beside the shipped ones. The default settings (seed,
steps, shape) are the shipped models'; the package's own folder is written only when --out names it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

import torch
from tqdm import tqdm

from transformer_viz.analysis.architecture import toy_architecture
from transformer_viz.analysis.induction import fresh_measures, phase_change, training_probe
from transformer_viz.config import ARCHITECTURES
from transformer_viz.data.tasks import LM_TASKS, TASKS, get_task
from transformer_viz.model import build_model
from transformer_viz.train.evaluation import evaluate
from transformer_viz.train.loop import StepInfo, recommended_threads, train
from transformer_viz.weights.pretrained import check_name, load_pretrained, pretrained_name, save_pretrained

CURVE_EVERY = 25  # steps between two points of the induction task's training curve
EVAL_SEED = 12345  # held-out inputs for the metrics in the metadata (tests use other seeds)
DEFAULT_OUT = "checkpoints"  # in the working directory: never the installed package's own folder


def train_task(task_name: str, out: str, *, steps: int | None, batch_size: int | None, lr: float | None,
               warmup: int | None, seed: int, eval_samples: int, command: str, name: str | None = None,
               architecture: str = "encoder_decoder") -> dict:
    """Train one task from scratch, save it as `name` (default: `pretrained_name`), reload it and write its measured
    metrics; returns the metrics."""
    task = get_task(task_name)
    defaults = task.train_defaults
    settings = dict(
        steps=defaults.steps if steps is None else steps,
        batch_size=defaults.batch_size if batch_size is None else batch_size,
        lr=defaults.lr if lr is None else lr,
        warmup=defaults.warmup if warmup is None else warmup,
        label_smoothing=defaults.label_smoothing,
    )
    config = toy_architecture(architecture).task_config(task)
    model = build_model(config, generator=torch.Generator().manual_seed(seed))
    # The induction task records its phase change: the heads' scores and the losses every CURVE_EVERY steps.
    probe, curve = training_probe(task, CURVE_EVERY) if task.lm_form == "continue" else (None, None)
    if probe is not None:
        probe(model, 0, None)
    with tqdm(total=settings["steps"], desc=task.name, unit="step", dynamic_ncols=True) as bar:
        def on_step(info: StepInfo) -> None:
            bar.update(1)
            if info.step % 10 == 0:
                bar.set_postfix(loss=f"{info.loss:.4f}", acc=f"{info.accuracy:.3f}")
            if probe is not None:
                probe(model, info.step, info.loss)

        result = train(model, task, seed=seed, on_step=on_step, **settings)
    training = {
        "command": command,
        **settings,
        "seed": seed,
        "steps_done": result.steps,
        "seconds": round(result.seconds, 1),
        "threads": torch.get_num_threads(),
        "final_loss": result.history[-1][1],
        "final_accuracy": result.history[-1][2],
        "torch": torch.__version__,
    }
    if curve is not None:
        training |= {"induction_curve": curve, **phase_change(curve)}
    name = pretrained_name(task.name, architecture) if name is None else name
    save_pretrained(model, task, out, name=name, training=training)
    # Measure what ships: the weights after their round trip through the half-precision file.
    reloaded = load_pretrained(name, out)
    metrics = evaluate(reloaded.model, task, n=eval_samples, seed=EVAL_SEED)
    measured = metrics.to_dict()
    if curve is not None:
        measured["induction"] = fresh_measures(reloaded.model, task, seed=EVAL_SEED)
    save_pretrained(reloaded.model, task, out, name=name, training=training, metrics=measured)
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer_viz.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", action="append", required=True,
                        help=f"task to train ({', '.join(TASKS)}, or 'all'; decoder-only also {', '.join(LM_TASKS)}); "
                             "repeat for several")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help=f"folder for <name>.safetensors and <name>.json (default: ./{DEFAULT_OUT} in the working "
                             "directory; the shipped models are retrained with --out transformer_viz/weights/shipped)")
    parser.add_argument("--name", help="the checkpoint's name: 1 to 64 lower-case letters, digits, '-' and '_' "
                                       "(default: the task's name; one task only)")
    parser.add_argument("--architecture", choices=ARCHITECTURES, default="encoder_decoder",
                        help="encoder_decoder (the paper's, the default) or decoder_only (GPT's: the prompt and its "
                             "answer as one sequence)")
    parser.add_argument("--steps", type=int, help="optimiser steps (default: the task's)")
    parser.add_argument("--batch-size", type=int, help="sequences per step (default: the task's)")
    parser.add_argument("--lr", type=float, help="peak learning rate (default: the task's)")
    parser.add_argument("--warmup", type=int, help="warm-up steps (default: the task's)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the initial weights and the data (default 0)")
    parser.add_argument("--eval-samples", type=int, default=1000, help="held-out inputs for the metrics")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: 2, or 1 while another process keeps a core busy)")
    args = parser.parse_args(argv)

    learnt = toy_architecture(args.architecture).tasks()
    names = list(learnt) if "all" in args.task else args.task
    try:
        for task_name in names:
            get_task(task_name)
            if task_name not in learnt:
                raise ValueError(f"The {task_name} task is learnt by a decoder-only model: add "
                                 f"--architecture decoder_only.")
        if args.name is not None:
            check_name(args.name)
    except ValueError as error:
        parser.error(str(error))
    if args.name is not None and len(names) > 1:
        parser.error(f"--name names one checkpoint, but {len(names)} tasks were asked for: train them one by one.")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}.")
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(recommended_threads() if args.threads is None else args.threads)  # train() never sets it
    command = shlex.join(["python", "-m", "transformer_viz.train", *(sys.argv[1:] if argv is None else argv)])
    try:
        for task_name in names:
            start = time.perf_counter()
            metrics = train_task(task_name, args.out, steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                                 warmup=args.warmup, seed=args.seed, eval_samples=args.eval_samples,
                                 command=command, name=args.name, architecture=args.architecture)
            name = args.name or pretrained_name(task_name, args.architecture)
            print(f"{name}: exact match {metrics.exact_match:.1%}, attention on the gold source "
                  f"{metrics.alignment_accuracy:.1%} (decoder layer {metrics.alignment_layer + 1}), "
                  f"{time.perf_counter() - start:.0f} s -> {args.out}", flush=True)
    finally:
        torch.set_num_threads(previous_threads)  # main() may run inside a larger program (or a test)
    return 0
