"""Small pretrained models that ship with the package, so the first picture is a real pattern.

Each model is two files in `checkpoints/`: `<name>.safetensors` holds the weights
(half precision, to keep the package small; loaded back as float32) and `<name>.json`
the metadata: the ModelConfig, both vocabularies, how it was trained (the exact
command) and the metrics measured on held-out inputs after that round trip.
safetensors files hold tensors only, so loading one never runs code from the file.
Everything in both files is checked before a model is built: the metadata's types and the
config's limits, then every tensor's name, shape, dtype and values.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from transformer_viz.analysis.architecture import Architecture, architecture_of, readable_target, toy_architecture
from transformer_viz.analysis.runs import TextRun
from transformer_viz.config import ModelConfig
from transformer_viz.data.tasks import Task, get_task
from transformer_viz.data.vocab import Vocab
from transformer_viz.errors import TranslatableError
from transformer_viz.model import DecoderOnlyTransformer, Transformer, build_model
from transformer_viz.model.sampling import Sampling
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.record import Trace

CHECKPOINT_DIR = Path(__file__).resolve().parent / "shipped"
# Extra folders of checkpoints an app lists beside the shipped ones: os.pathsep-separated (`transformer-viz
# --checkpoints DIR` sets it).
CHECKPOINTS_ENV = "TVIZ_CHECKPOINTS"
FORMAT_VERSION = 1
STORAGE_DTYPE = torch.float16
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
MAX_METADATA_BYTES = 1_000_000  # the shipped files are ~3 kB; the bound also keeps json.loads from deep recursion
HEADER_BYTES = 1_000_000  # room in a weights file for its header (names, shapes, offsets) beside the tensors
STORED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# The metadata's fields and their JSON types; the first five are required.
FIELDS = {"task": str, "config": dict, "src_vocab": list, "tgt_vocab": list, "weights": dict,
          "name": str, "title": str, "training": dict, "metrics": dict}
REQUIRED = ("task", "config", "src_vocab", "tgt_vocab", "weights")
TYPE_WORDS = {str: "a string", dict: "a JSON object", list: "a list of strings"}


class _Problem(ValueError):
    """What is wrong with a checkpoint file: an English sentence, a stable `code` and the values it names.

    load_pretrained passes code and values on in its TranslatableError ("problem", ...), so that an app can say
    each problem in its own words. Codes: json, format (a field, in `field`), task, config, vocab, fit, size,
    checksum, tensors, dtype (of `tensor`), shape (of `tensor`: `shape`, `expected`), nonfinite (`tensor`),
    unreadable.
    """

    def __init__(self, code: str, message: str, **values) -> None:
        super().__init__(message)
        self.code = code
        self.values = values


@dataclass
class Pretrained:
    """A trained model with everything needed to use it.

    `metrics` are the measured held-out scores (see training.evaluate); `meta` is the whole
    JSON metadata. The model is in eval mode and shared: train a `copy()` instead.
    """

    model: Transformer | DecoderOnlyTransformer
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

    @property
    def architecture(self) -> Architecture:
        """What the model is and how it runs text (analysis/architecture.py)."""
        return architecture_of(self.model)

    def run_text(self, text: str, target: str | None = None, *, max_new_tokens: int | None = None,
                 pad_to: int = 0, intervention: Intervention | None = None,
                 sampling: Sampling | None = None) -> TextRun:
        """`text` through the model with a trace (analysis.inference.run_text): decoded (greedy, or drawn as
        `sampling` says) or, given `target`, teacher-forced. An encoder-decoder reads `text` as its source, a
        decoder-only model as its prompt."""
        return self.architecture.run_text(self.model, self.task, text, target, max_new_tokens=max_new_tokens,
                                          pad_to=pad_to, intervention=intervention, sampling=sampling)

    def generate(self, text: str, max_new_tokens: int | None = None, sampling: Sampling | None = None) -> str:
        """The model's answer to `text`: greedy, or drawn as `sampling` says."""
        return self.run_text(text, max_new_tokens=max_new_tokens, sampling=sampling).output_text

    def translate(self, text: str, max_new_tokens: int | None = None) -> tuple[str, Trace]:
        """Greedy-decode `text`, then record one teacher-forced pass over the decoded answer.

        Returns (output text, trace). Every attention map of the trace covers the whole answer: the decoder's input
        is <bos> + the answer (a decoder-only model's: the prompt + the answer), so the row of answer token j is
        the step that wrote token j + 1 (the last row wrote <eos>). `trace.src_tokens` (input + <eos>, unknown
        tokens as <unk>; None for a decoder-only model) and `trace.tgt_tokens` are set. Raises ValueError for
        empty or too long input (see tasks.encode_source).
        """
        output = self.generate(text, max_new_tokens)
        forced = readable_target(self.task, output)
        return output, (self.run_text(text, forced) if forced else self.run_text(text)).trace


def pretrained_name(task_name: str, architecture: str = "encoder_decoder") -> str:
    """The checkpoint name of a task's model unless told otherwise: the task's, `<task>-gpt` for a decoder-only one."""
    return toy_architecture(architecture).pretrained_name(task_name)


def check_name(name: str) -> str:
    """The name, if it is 1 to 64 lower-case letters, digits, '-' and '_' (checked before any file is touched)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"{_short(name)} is not a valid model name: use 1 to 64 lower-case letters, digits, "
                         f"'-' and '_', starting with a letter or digit.")
    return name


def _short(value: object) -> str:
    """repr(value), cut to 60 characters so that an error message stays readable."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _root(directory: str | Path | None) -> Path:
    if directory is None:
        return CHECKPOINT_DIR
    if not isinstance(directory, str | os.PathLike):
        raise ValueError(f"directory must be a folder path (a str or Path), got {type(directory).__name__}.")
    return Path(directory)


def _paths(name: str, directory: str | Path | None) -> tuple[Path, Path]:
    root = _root(directory)
    return root / f"{name}.json", root / f"{name}.safetensors"


def _exists(path: Path, test=Path.is_file) -> bool:
    """Path.is_file (or `test`), an unusable path (too long, a NUL byte) counting as missing."""
    try:
        return test(path)
    except (OSError, ValueError):
        return False


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def available_pretrained(directory: str | Path | None = None) -> list[str]:
    """Names of the models in `directory` (default: the shipped checkpoints) that have both files."""
    root = _root(directory)
    if not _exists(root, Path.is_dir):
        return []
    return sorted(p.stem for p in root.glob("*.json") if p.with_suffix(".safetensors").is_file())


def checkpoint_dirs(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The extra checkpoint folders named by $TVIZ_CHECKPOINTS (os.pathsep-separated; `~` expanded, empty
    entries skipped, each folder once, in order). `environ` defaults to os.environ."""
    value = (os.environ if environ is None else environ).get(CHECKPOINTS_ENV, "")
    folders = [Path(entry).expanduser() for entry in value.split(os.pathsep) if entry.strip()]
    return list(dict.fromkeys(folders))


def extra_checkpoints(directories: Iterable[str | Path] | None = None) -> dict[str, Path]:
    """Name -> folder of every checkpoint (both files present) in `directories` (default: checkpoint_dirs()).

    A name found in several folders is the first folder's, as a command is found on PATH. Nothing is
    loaded or checked here: load_pretrained(name, folder) does that (and raises ValueError for a bad one).
    """
    found: dict[str, Path] = {}
    for folder in checkpoint_dirs() if directories is None else directories:
        for name in available_pretrained(folder):
            found.setdefault(name, Path(folder))
    return found


def save_pretrained(model: Transformer | DecoderOnlyTransformer, task: Task, directory: str | Path | None = None, *,
                    name: str | None = None, metrics: dict | None = None, training: dict | None = None) -> Path:
    """Write `<name>.safetensors` (weights in half precision) and `<name>.json`; returns the JSON path.

    The name defaults to the task's name; `training` records how the model was made
    (command, steps, seed, ...), `metrics` what it scored. Raises ValueError, before writing
    anything, for what `load_pretrained` would refuse.
    """
    name = check_name(task.name if name is None else name)
    for label, value in (("metrics", metrics), ("training", training)):
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{label} must be a dict, got {_short(value)}.")
    try:
        json.dumps([metrics, training])
    except (TypeError, ValueError) as error:
        raise ValueError(f"metrics and training must hold JSON values (numbers, text, lists, dicts): "
                         f"{error}.") from None
    tensors = {key: value.detach().to(STORAGE_DTYPE).contiguous() for key, value in model.state_dict().items()}
    for key, tensor in tensors.items():
        if not torch.isfinite(tensor).all():
            raise ValueError(f"{key} holds values that float16 cannot store (NaN, or beyond ±65504): "
                             f"loading would refuse this checkpoint.")
    json_path, weights_path = _paths(name, directory)
    json_path.parent.mkdir(parents=True, exist_ok=True)
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

    Both files are checked before the model is built (see the module docstring). Each call
    builds a fresh model in eval mode, so callers never share mutable state unless they
    keep and share the result themselves.
    """
    name = check_name(name)
    json_path, weights_path = _paths(name, directory)
    if not _exists(json_path) or not _exists(weights_path):
        known = ", ".join(available_pretrained(directory)) or "none"
        command = retrain_command(name, name, json_path.parent)
        raise TranslatableError("checkpoint.missing", f"There is no pretrained model called {name!r} in "
                                f"{json_path.parent} (available: {known}). Train one with: {command}",
                                name=name, folder=str(json_path.parent), available=known, command=command)
    meta, task, config = _checked_metadata(name, json_path)
    tensors = _checked_weights(name, weights_path, meta, task, config)
    model = build_model(config, generator=torch.Generator())  # every value is replaced: draw nothing global
    model.load_state_dict(tensors, strict=True)
    vocabs = Vocab(tuple(meta["src_vocab"])), Vocab(tuple(meta["tgt_vocab"]))
    return Pretrained(model.eval(), task, *vocabs, dict(meta.get("metrics", {})), meta)


def _bad_file(name: str, path: Path, task_name: str, message: str, code: str, architecture: str | None = None,
              **values) -> TranslatableError:
    """Any problem with a checkpoint's files but a missing one: one key, the English sentence says which (the
    app's details); `problem` (a _Problem code) and its values let an app say which in its own words."""
    command = retrain_command(name, task_name, path.parent, architecture)
    return TranslatableError("checkpoint.bad", f"{message} Retrain it with: {command}", name=name,
                             file=path.name, command=command, problem=code, **values)


def _checked_metadata(name: str, json_path: Path) -> tuple[dict, Task, ModelConfig]:
    """The metadata of checkpoint `name`, its task and its config, every field checked."""
    task_name = name  # until the metadata names its task
    try:
        meta = _read_metadata(json_path)
        task = _task_of(meta["task"])
        task_name = task.name
        try:
            config = ModelConfig.from_dict(meta["config"])
        except ValueError as error:
            raise _Problem("config", str(error), reason=str(error)) from None
        src_vocab, tgt_vocab = Vocab(tuple(meta["src_vocab"])), Vocab(tuple(meta["tgt_vocab"]))
    except _Problem as error:
        raise _bad_file(name, json_path, task_name, f"The metadata file {json_path} is corrupt or incomplete "
                        f"({error}).", error.code, **error.values) from None
    except (OSError, ValueError) as error:  # json's and utf-8's errors are ValueErrors too
        raise _bad_file(name, json_path, task_name, f"The metadata file {json_path} is corrupt or incomplete "
                        f"({error}).", "json") from None
    if src_vocab != task.src_vocab or tgt_vocab != task.tgt_vocab:
        raise _bad_file(name, json_path, task.name, f"{name!r} was trained with other vocabularies than the "
                        f"{task.name} task has now.", "vocab", architecture=config.architecture, task=task.name)
    try:
        toy_architecture(config.architecture).check_fits(task, config)
    except ValueError as error:
        raise _bad_file(name, json_path, task.name, f"The metadata file {json_path} does not fit its task: "
                        f"{error}", "fit", architecture=config.architecture, task=task.name) from None
    return meta, task, config


def _checked_weights(name: str, weights_path: Path, meta: dict, task: Task,
                     config: ModelConfig) -> dict[str, torch.Tensor]:
    """The tensors of checkpoint `name`: its size bounded by the config, its checksum, names, shapes and values
    checked."""
    bad = functools.partial(_bad_file, name, weights_path, task.name, architecture=config.architecture)
    shapes = expected_shapes(config)
    size, limit = weights_path.stat().st_size, 4 * sum(map(math.prod, shapes.values())) + HEADER_BYTES
    if size > limit:
        raise bad(f"The weights file {weights_path} is larger than a model of "
                        f"this config can be ({size:,} bytes, at most {limit:,}).", "size", size=size, limit=limit)
    if _sha256(weights_path) != meta["weights"]["sha256"]:
        raise bad(f"The weights file {weights_path} does not match its "
                        "metadata (checksum differs): it is corrupt or was replaced.", "checksum")
    try:
        return _read_weights(weights_path, shapes)
    except _Problem as error:
        raise bad(f"The weights file {weights_path} cannot be loaded "
                        f"({error}).", error.code, **error.values) from None
    except Exception as error:  # safetensors raises its own error types; all mean "bad file"
        raise bad(f"The weights file {weights_path} cannot be loaded "
                        f"({error}).", "unreadable") from None


def retrain_command(name: str, task: str, folder: Path, architecture: str | None = None) -> str:
    """The command that writes checkpoint `name` of `task` (and `architecture`, if not the default) into `folder`
    again."""
    named = f" --name {name}" if name != task else ""
    shape = f" --architecture {architecture}" if architecture not in (None, "encoder_decoder") else ""
    return f"python -m transformer_viz.train --task {task}{shape}{named} --out {folder}"


def _task_of(name: str) -> Task:
    try:
        return get_task(name)
    except ValueError as error:
        raise _Problem("task", str(error), task=name) from None


def expected_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor a model of `config` saves, read from a model on the meta device (no memory)."""
    with torch.device("meta"):
        model = build_model(config)
    return {key: tuple(value.shape) for key, value in model.state_dict().items()}


def _read_metadata(path: Path) -> dict:
    """The JSON metadata, its size bounded and its fields' types checked; ValueError saying what is wrong."""
    size = path.stat().st_size
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"it is {size:,} bytes, more than metadata ever needs ({MAX_METADATA_BYTES:,})")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise ValueError("it is nested too deeply to be metadata") from None
    if not isinstance(meta, dict):
        raise ValueError("it is not a JSON object")
    version = meta.get("format_version")
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise _Problem("format", f"unknown format_version {_short(version)}", field="format_version")
    for key, kind in FIELDS.items():
        if key not in meta and key in REQUIRED:
            raise _Problem("format", f"it has no {key}", field=key)
        if key in meta and not isinstance(meta[key], kind):
            raise _Problem("format", f"{key} should be {TYPE_WORDS[kind]}, got {_short(meta[key])}", field=key)
    for key in ("src_vocab", "tgt_vocab"):
        if not all(isinstance(token, str) for token in meta[key]):
            raise _Problem("format", f"{key} should be a list of strings", field=key)
    if not isinstance(meta["weights"].get("sha256"), str):
        raise _Problem("format", f"weights.sha256 should be a string, got {_short(meta['weights'].get('sha256'))}",
                       field="weights.sha256")
    return meta


def _read_weights(path: Path, shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file as float32, once their names, dtypes, shapes and values are checked."""
    with safe_open(str(path), framework="pt") as file:
        names = set(file.keys())
        missing, unexpected = sorted(set(shapes) - names), sorted(names - set(shapes))
        if missing or unexpected:
            wrong = [f"{label}: {', '.join(keys[:3])}{', ...' * (len(keys) > 3)}"
                     for label, keys in (("missing", missing), ("unexpected", unexpected)) if keys]
            raise _Problem("tensors", f"its tensors are not this model's ({'; '.join(wrong)})")
        tensors = {}
        for key, shape in shapes.items():
            tensor = file.get_tensor(key)
            if tensor.dtype not in STORED_DTYPES:
                dtype = str(tensor.dtype).removeprefix("torch.")
                raise _Problem("dtype", f"{key} is stored as {dtype}, not as float32, float16 or bfloat16",
                               tensor=key, dtype=dtype)
            if tuple(tensor.shape) != shape:
                raise _Problem("shape", f"{key} has shape {tuple(tensor.shape)} but the model needs {shape}",
                               tensor=key, shape=str(tuple(tensor.shape)), expected=str(shape))
            if not torch.isfinite(tensor).all():
                raise _Problem("nonfinite", f"{key} holds NaN or infinite values", tensor=key)
            tensors[key] = tensor.float()
    return tensors
