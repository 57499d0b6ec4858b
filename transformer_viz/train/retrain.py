"""Train one task from scratch and save it as a checkpoint with its measured metrics (`train/cli.py` runs it)."""

from __future__ import annotations

import torch
from tqdm import tqdm

from transformer_viz.analysis.architecture import toy_architecture
from transformer_viz.analysis.induction import fresh_measures, phase_change, training_probe
from transformer_viz.data.tasks import get_task
from transformer_viz.model import build_model
from transformer_viz.train.evaluation import evaluate
from transformer_viz.train.loop import StepInfo, train
from transformer_viz.weights.pretrained import load_pretrained, pretrained_name, save_pretrained

CURVE_EVERY = 25  # steps between two points of the induction task's training curve
EVAL_SEED = 12345  # held-out inputs for the metrics in the metadata (tests use other seeds)


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
