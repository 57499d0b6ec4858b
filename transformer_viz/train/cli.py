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

from transformer_viz.config import ARCHITECTURES, LM_TASK_NAMES, TASK_NAMES

DEFAULT_OUT = "checkpoints"  # in the working directory: never the installed package's own folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer_viz.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", action="append", required=True,
                        help=f"task to train ({', '.join(TASK_NAMES)}, or 'all'; decoder-only also "
                             f"{', '.join(LM_TASK_NAMES)}); repeat for several")
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
    # Only now the model's modules (torch: seconds to import): --help and a wrong option answer at once
    import torch

    from transformer_viz.analysis.architecture import toy_architecture
    from transformer_viz.data.tasks import get_task
    from transformer_viz.train.loop import recommended_threads
    from transformer_viz.train.retrain import train_task
    from transformer_viz.weights.pretrained import check_name, pretrained_name

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
