"""transformer_viz: a small encoder-decoder Transformer that records everything a lesson needs."""

from .config import POSITIONAL_ENCODINGS, ModelConfig
from .model import Transformer
from .recording import LEAVES, HookPoint, Trace, name, recording

__all__ = ["LEAVES", "POSITIONAL_ENCODINGS", "HookPoint", "ModelConfig", "Trace", "Transformer", "name", "recording"]
