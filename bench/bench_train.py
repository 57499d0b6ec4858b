"""Wall time for the reverse task to reach 99 % exact match: `python bench/bench_train.py`.

Trains a fresh model at the default config (the shipped model's settings, seed 0) and
pauses the clock every 50 steps to measure exact match on 500 fresh random inputs of
every length. Prints the training time until the first check at or above 99 % (budget:
30 s on 2 CPU cores), the time spent checking, and a confirmation on 1000 other inputs.
"""

import os
import sys
import time

import torch

from transformer_viz.data.tasks import get_task, model_config_for
from transformer_viz.model import Transformer
from transformer_viz.train.evaluation import evaluate
from transformer_viz.train.loop import StepInfo, recommended_threads, train

CHECK_EVERY = 50
TARGET = 0.99


def main() -> int:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else recommended_threads()
    torch.set_num_threads(threads)
    task = get_task("reverse")
    torch.manual_seed(0)
    model = Transformer(model_config_for(task))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, {threads} thread(s), {os.cpu_count()} cores, load average {load:.2f}")
    print(f"reverse, default config: {model.config}\n  {task.train_defaults}")

    clock = {"training": 0.0, "checking": 0.0, "since": time.perf_counter()}
    reached: dict = {}

    def on_step(info: StepInfo) -> None:
        if info.step % CHECK_EVERY:
            return
        paused = time.perf_counter()
        clock["training"] += paused - clock["since"]
        exact = evaluate(model, task, n=500, seed=99).exact_match
        clock["since"] = time.perf_counter()
        clock["checking"] += clock["since"] - paused
        print(f"  step {info.step:5d}  loss {info.loss:.4f}  exact match {exact:6.1%}  "
              f"training time {clock['training']:5.1f} s", flush=True)
        if exact >= TARGET and not reached:
            reached.update(step=info.step, seconds=clock["training"])

    start = time.perf_counter()
    train(model, task, seed=0, on_step=on_step, should_stop=lambda: bool(reached))  # at the threads set above
    total = time.perf_counter() - start
    if not reached:
        print(f"reverse never reached {TARGET:.0%} exact match in {task.train_defaults.steps} steps ({total:.1f} s)")
        return 1
    confirm = evaluate(model, task, n=1000, seed=2024).exact_match
    print(f"reverse: {TARGET:.0%} exact match after {reached['step']} steps in {reached['seconds']:.1f} s of training "
          f"(budget 30 s; {clock['checking']:.1f} s more spent checking, {total:.1f} s wall in all); "
          f"confirmed on 1000 other inputs: {confirm:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
