"""Toy tasks with a known answer and a known alignment, so that trained attention means something."""

from transformer_viz.data.tasks.algorithmic import COPY, REVERSE, ROTATE, SORT, CharTask
from transformer_viz.data.tasks.base import (
    SourceInput,
    TargetInput,
    Task,
    TrainDefaults,
    check_fits,
    default_config,
    encode_source,
    encode_target,
    model_config_for,
)
from transformer_viz.data.tasks.en_fr import EN_FR
from transformer_viz.data.tasks.en_zh import EN_ZH
from transformer_viz.data.tasks.induction import INDUCTION
from transformer_viz.data.tasks.translation import TranslationTask, max_match

TASKS: dict[str, Task] = {task.name: task for task in (COPY, REVERSE, SORT, ROTATE, EN_FR, EN_ZH)}
# Tasks only a decoder-only model learns (one stream, no source to encode).
LM_TASKS: dict[str, Task] = {INDUCTION.name: INDUCTION}


def get_task(task_name: str) -> Task:
    """The task called `task_name`; ValueError listing the known names otherwise."""
    try:
        return TASKS[task_name] if task_name in TASKS else LM_TASKS[task_name]
    except (KeyError, TypeError):
        raise ValueError(f"Unknown task {task_name!r}; choose one of {', '.join([*TASKS, *LM_TASKS])}.") from None


__all__ = [
    "LM_TASKS",
    "TASKS",
    "CharTask",
    "SourceInput",
    "TargetInput",
    "Task",
    "TrainDefaults",
    "TranslationTask",
    "check_fits",
    "default_config",
    "encode_source",
    "encode_target",
    "get_task",
    "max_match",
    "model_config_for",
]
