"""transformer_viz: a small encoder-decoder Transformer that records everything a lesson needs."""

__version__ = "0.2.0"

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
from transformer_viz.weights.pretrained import (
    Pretrained,
    available_pretrained,
    load_pretrained,
    save_pretrained,
)

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
