"""transformer_viz: a small encoder-decoder Transformer that records everything a lesson needs.

The public names below load their modules on first use (PEP 562), so that what needs none of them starts
without importing torch: `transformer-viz --help` answers at once, and the app's command checks its arguments and
limits before the server loads anything.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.2.0"

if TYPE_CHECKING:  # what type checkers and editors read; at run time __getattr__ imports each on first use
    from transformer_viz.analysis.inference import TextRun, run_text
    from transformer_viz.config import POSITIONAL_ENCODINGS, ModelConfig
    from transformer_viz.data.bpe import BytePairEncoding, learn_bpe
    from transformer_viz.data.tasks import TASKS, Task, encode_source, encode_target, get_task, model_config_for
    from transformer_viz.data.vocab import Vocab
    from transformer_viz.model import Transformer
    from transformer_viz.model.hooks import HookPoint, recording
    from transformer_viz.trace.intervention import Intervention
    from transformer_viz.trace.names import LEAVES, name
    from transformer_viz.trace.record import Trace
    from transformer_viz.train.evaluation import evaluate
    from transformer_viz.train.loop import AttentionSnapshot, StepInfo, TrainResult
    from transformer_viz.weights.pretrained import Pretrained, available_pretrained, load_pretrained, save_pretrained

_HOMES = {  # each public name's module (the same as the imports above)
    "transformer_viz.analysis.inference": ("TextRun", "run_text"),
    "transformer_viz.config": ("POSITIONAL_ENCODINGS", "ModelConfig"),
    "transformer_viz.data.bpe": ("BytePairEncoding", "learn_bpe"),
    "transformer_viz.data.tasks": ("TASKS", "Task", "encode_source", "encode_target", "get_task", "model_config_for"),
    "transformer_viz.data.vocab": ("Vocab",),
    "transformer_viz.model": ("Transformer",),
    "transformer_viz.model.hooks": ("HookPoint", "recording"),
    "transformer_viz.trace.intervention": ("Intervention",),
    "transformer_viz.trace.names": ("LEAVES", "name"),
    "transformer_viz.trace.record": ("Trace",),
    "transformer_viz.train.evaluation": ("evaluate",),
    "transformer_viz.train.loop": ("AttentionSnapshot", "StepInfo", "TrainResult"),
    "transformer_viz.weights.pretrained": ("Pretrained", "available_pretrained", "load_pretrained", "save_pretrained"),
}
_HOME_OF = {public: module for module, names in _HOMES.items() for public in names}


def __getattr__(attribute: str):
    """A public name, imported from its module the first time it is asked for (then kept here)."""
    if attribute not in _HOME_OF:
        raise AttributeError(f"module 'transformer_viz' has no attribute {attribute!r}")
    value = getattr(importlib.import_module(_HOME_OF[attribute]), attribute)
    globals()[attribute] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME_OF})


__all__ = [
            "LEAVES",
            "POSITIONAL_ENCODINGS",
            "TASKS",
            "AttentionSnapshot",
            "BytePairEncoding",
            "HookPoint",
            "Intervention",
            "ModelConfig",
            "Pretrained",
            "StepInfo",
            "Task",
            "TextRun",
            "Trace",
            "TrainResult",
            "Transformer",
            "Vocab",
            "__version__",
            "available_pretrained",
            "encode_source",
            "encode_target",
            "evaluate",
            "get_task",
            "learn_bpe",
            "load_pretrained",
            "model_config_for",
            "name",
            "recording",
            "run_text",
            "save_pretrained",
]
