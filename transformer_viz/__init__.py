"""transformer_viz: a small encoder-decoder Transformer that records everything a lesson needs."""

__version__ = "0.2.0"

from .config import POSITIONAL_ENCODINGS, ModelConfig
from .inference import TextRun, run_text
from .intervention import Intervention
from .model import Transformer
from .pretrained import Pretrained, available_pretrained, load_pretrained, save_pretrained
from .recording import LEAVES, HookPoint, Trace, name, recording
from .tasks import TASKS, Task, encode_source, encode_target, get_task, model_config_for
from .tokenizers import BytePairEncoding, learn_bpe
from .training import AttentionSnapshot, StepInfo, TrainResult, evaluate
from .vocab import Vocab

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
