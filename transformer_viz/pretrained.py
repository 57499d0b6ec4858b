"""Small pretrained models that ship with the package, so the first picture is a real pattern.

Each model is two files in `checkpoints/`: `<name>.safetensors` holds the weights
(half precision, to keep the package small; loaded back as float32) and `<name>.json`
the metadata: the ModelConfig, both vocabularies, how it was trained (the exact
command) and the metrics measured on held-out inputs after that round trip.
safetensors files hold tensors only, so loading one never runs code from the file.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .config import ModelConfig
from .model import Transformer
from .recording import Trace
from .tasks import Task, encode_source, get_task
from .vocab import Vocab

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
FORMAT_VERSION = 1
STORAGE_DTYPE = torch.float16
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass
class Pretrained:
    """A trained model with everything needed to use it.

    `metrics` are the measured held-out scores (see training.evaluate); `meta` is the whole
    JSON metadata. The model is in eval mode and shared: train a `copy()` instead.
    """

    model: Transformer
    task: Task
    src_vocab: Vocab
    tgt_vocab: Vocab
    metrics: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.meta.get("name", self.task.name)

    def copy(self) -> Pretrained:
        """An independent copy whose model can be trained without touching this one."""
        return Pretrained(copy.deepcopy(self.model), self.task, self.src_vocab, self.tgt_vocab,
                          copy.deepcopy(self.metrics), copy.deepcopy(self.meta))

    def translate(self, text: str, max_new_tokens: int | None = None) -> tuple[str, Trace]:
        """Greedy-decode `text`, then record one teacher-forced pass over the decoded answer.

        Returns (output text, trace). The trace's decoder input is <bos> + the output tokens,
        so row j of every decoder map is the step that wrote output token j (the last row
        wrote <eos>) and every attention map covers the whole answer. `trace.src_tokens`
        (input + <eos>, unknown tokens as <unk>) and `trace.tgt_tokens` are set. Raises
        ValueError for empty or too long input (see tasks.encode_source).
        """
        config = self.model.config
        src = encode_source(self.task, text, max_len=config.max_len)
        limit = self.task.max_target_len + 1 if max_new_tokens is None else max_new_tokens
        out, _ = self.model.generate(src.ids, max_new_tokens=limit, bos_id=Vocab.bos_id, eos_id=Vocab.eos_id)
        ids = out[0, 1:].tolist()
        if Vocab.eos_id in ids:
            ids = ids[: ids.index(Vocab.eos_id)]
        tgt_ids = torch.tensor([[Vocab.bos_id, *ids]], dtype=torch.int64)  # (1, tgt_len)
        _, trace = self.model.run_with_trace(src.ids, tgt_ids)
        tokens = self.tgt_vocab.decode(ids)
        return self.task.join(tokens), trace.with_tokens(src.tokens, self.tgt_vocab.decode(tgt_ids[0].tolist()))


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{name!r} is not a valid model name: use lower-case letters, digits, '-' and '_'.")
    return name


def _paths(name: str, directory: str | Path | None) -> tuple[Path, Path]:
    root = CHECKPOINT_DIR if directory is None else Path(directory)
    return root / f"{name}.json", root / f"{name}.safetensors"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def available_pretrained(directory: str | Path | None = None) -> list[str]:
    """Names of the models in `directory` (default: the shipped checkpoints) that have both files."""
    root = CHECKPOINT_DIR if directory is None else Path(directory)
    if not root.is_dir():
        return []
    return sorted(p.stem for p in root.glob("*.json") if p.with_suffix(".safetensors").is_file())


def save_pretrained(model: Transformer, task: Task, directory: str | Path | None = None, *, name: str | None = None,
                    metrics: dict | None = None, training: dict | None = None) -> Path:
    """Write `<name>.safetensors` (weights in half precision) and `<name>.json`; returns the JSON path.

    The name defaults to the task's name; `training` records how the model was made
    (command, steps, seed, ...), `metrics` what it scored.
    """
    name = _check_name(task.name if name is None else name)
    json_path, weights_path = _paths(name, directory)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {key: value.detach().to(STORAGE_DTYPE).contiguous() for key, value in model.state_dict().items()}
    save_file(tensors, str(weights_path), metadata={"format": "transformer_viz", "name": name})
    meta = {
        "format_version": FORMAT_VERSION,
        "name": name,
        "task": task.name,
        "title": task.title,
        "config": model.config.to_dict(),
        "src_vocab": list(task.src_vocab.tokens),
        "tgt_vocab": list(task.tgt_vocab.tokens),
        "weights": {"file": weights_path.name, "dtype": str(STORAGE_DTYPE).removeprefix("torch."),
                    "sha256": _sha256(weights_path), "parameters": sum(p.numel() for p in model.parameters())},
        "training": training or {},
        "metrics": metrics or {},
    }
    json_path.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return json_path


def load_pretrained(name: str, directory: str | Path | None = None) -> Pretrained:
    """Load a shipped (or saved) model by name. Every problem with the files raises ValueError.

    Each call builds a fresh model in eval mode, so callers never share mutable state
    unless they keep and share the result themselves.
    """
    name = _check_name(name)
    json_path, weights_path = _paths(name, directory)
    if not json_path.is_file() or not weights_path.is_file():
        known = ", ".join(available_pretrained(directory)) or "none"
        raise ValueError(f"There is no pretrained model called {name!r} in {json_path.parent} "
                         f"(available: {known}). Train one with: python -m transformer_viz.train --task {name}")
    retrain = f"Retrain it with: python -m transformer_viz.train --task {name} --out {json_path.parent}"
    try:
        meta = json.loads(json_path.read_text(encoding="utf-8"))
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"unknown format_version {meta.get('format_version')!r}")
        task = get_task(meta["task"])
        config = ModelConfig.from_dict(meta["config"])
        src_vocab, tgt_vocab = Vocab(tuple(meta["src_vocab"])), Vocab(tuple(meta["tgt_vocab"]))
        expected_sha = meta["weights"]["sha256"]
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as error:
        raise ValueError(f"The metadata file {json_path} is corrupt or incomplete ({error}). {retrain}") from None
    if src_vocab != task.src_vocab or tgt_vocab != task.tgt_vocab:
        raise ValueError(f"{name!r} was trained with other vocabularies than the {task.name} task has now. {retrain}")
    if _sha256(weights_path) != expected_sha:
        raise ValueError(f"The weights file {weights_path} does not match its metadata (checksum differs): "
                         f"it is corrupt or was replaced. {retrain}")
    try:
        tensors = load_file(str(weights_path))
        model = Transformer(config)
        model.load_state_dict({key: value.float() for key, value in tensors.items()}, strict=True)
    except Exception as error:  # safetensors and load_state_dict raise several types; all mean "bad file"
        raise ValueError(f"The weights file {weights_path} cannot be loaded ({error}). {retrain}") from None
    return Pretrained(model.eval(), task, src_vocab, tgt_vocab, dict(meta.get("metrics", {})), meta)
