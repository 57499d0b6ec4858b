"""A checkpoint as one file to download (a .zip of its two files) and back from uploaded files.

    data = checkpoint_zip(model, task, "my_reverse")           # my_reverse.safetensors + my_reverse.json
    loaded = read_upload([("my_reverse.zip", data)])          # a Pretrained, every check of load_pretrained passed

Uploaded files are bounded in size before anything is read, written under fixed names into a
fresh temporary folder (never under the names they came with, so a name cannot point elsewhere)
and loaded by `load_pretrained`: safetensors only, a pickle is never loaded. Every refusal is a
TranslatableError keyed "upload.<reason>" that names the uploaded file (its sentences: the catalogs'
"detail.upload.<reason>", transformer_viz/i18n).
"""

from __future__ import annotations

import io
import tempfile
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from transformer_viz.data.tasks import Task
from transformer_viz.errors import TranslatableError
from transformer_viz.i18n import translatable_error
from transformer_viz.model import Transformer
from transformer_viz.trace.archive import entry_count
from transformer_viz.weights.pretrained import (
    MAX_METADATA_BYTES,
    Pretrained,
    load_pretrained,
    save_pretrained,
)

MAX_UPLOAD_MB = 16  # the largest model the app builds (d_model 256, 6 + 6 layers, d_ff 512) is 15.2 MB in float16
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 2**20
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt", ".pkl", ".pickle")
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the files' date in the .zip: not when they were downloaded
_LOADED_AS = "upload"  # the name the files get in the temporary folder
# A checkpoint .zip holds its two files, and perhaps what archivers add (folders, macOS's __MACOSX/ forks):
# counted from the archive's end record before zipfile parses a single entry (185,000 empty ones cost seconds).
MAX_ZIP_ENTRIES = 16
ZIP_ROOM = 2**20  # unpacked bytes beside the two files' own limits, for what archivers add
ENCRYPTED = 0x1  # the general-purpose flag bit of an entry protected by a password

def refusal(kind: str, /, **values) -> TranslatableError:
    """The refusal of an upload: key "upload.<kind>", its English sentence "detail.upload.<kind>" with `values`."""
    return translatable_error(f"upload.{kind}", **values)


def checkpoint_zip(model: Transformer, task: Task, name: str, *, metrics: dict | None = None,
                   training: dict | None = None) -> bytes:
    """`<name>.safetensors` and `<name>.json` (as save_pretrained writes them) in one .zip, as bytes.

    Raises ValueError for what save_pretrained refuses (a bad name, values float16 cannot hold).
    """
    with tempfile.TemporaryDirectory() as folder:
        json_path = save_pretrained(model, task, folder, name=name, metrics=metrics, training=training)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in (json_path.with_suffix(".safetensors"), json_path):
                info = zipfile.ZipInfo(path.name, date_time=ZIP_DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def read_upload(files: Sequence[tuple[str, bytes]], task: str | None = None,
                max_bytes: int = MAX_UPLOAD_BYTES) -> Pretrained:
    """The checkpoint in uploaded files: (file name, content) of its .safetensors and .json, or of one .zip
    holding both. With `task`, weights of another task are refused. Raises TranslatableError ("upload.*"), or
    ValueError for arguments that are not (name, bytes) pairs."""
    _check_files(files)
    for file_name, content in files:
        suffix = PurePosixPath(file_name).suffix.lower()
        if suffix in PICKLE_SUFFIXES:
            raise refusal("pickle", file=file_name)
        if suffix not in (".safetensors", ".json", ".zip"):
            raise refusal("type", file=file_name)
        if len(content) > max_bytes:
            raise refusal("too_big", file=file_name, size=_megabytes(len(content)), limit=_megabytes(max_bytes))
    one_zip = len(files) == 1 and files[0][0].lower().endswith(".zip")
    loaded = _load_pair(_unzipped(*files[0], max_bytes) if one_zip else _pair(files))
    if task is not None and loaded.task.name != task:
        raise refusal("other_task", task=loaded.task.name, current_task=task)
    return loaded


def _check_files(files) -> None:
    if isinstance(files, (str, bytes)) or not isinstance(files, Sequence):
        raise ValueError(f"files must be a list of (file name, content) pairs, got {type(files).__name__}.")
    for pair in files:
        if not (isinstance(pair, tuple | list) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], bytes | bytearray)):
            raise ValueError("Each uploaded file must be a (file name, content) pair of a str and bytes, got "
                             f"{_shown(pair)}.")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f}"


def _pair(files: Sequence[tuple[str, bytes]]) -> dict[str, tuple[str, bytes]]:
    """{".safetensors": (name, content), ".json": (name, content)} of two uploaded files."""
    by_suffix = {}
    for file_name, content in files:
        by_suffix.setdefault(PurePosixPath(file_name).suffix.lower(), []).append((file_name, content))
    if ".zip" in by_suffix or len(files) > 2 or any(len(found) > 1 for found in by_suffix.values()):
        raise refusal("count", count=len(files))
    for suffix in (".safetensors", ".json"):
        if suffix not in by_suffix:
            raise refusal("missing", suffix=suffix)
    return {suffix: found[0] for suffix, found in by_suffix.items()}


def _unzipped(zip_name: str, content: bytes, max_bytes: int) -> dict[str, tuple[str, bytes]]:
    """The .safetensors and .json files inside a .zip (read within their size limits, never extracted)."""
    file = io.BytesIO(content)
    count = entry_count(file)
    if count is None:
        raise refusal("zip", file=zip_name)
    if count > MAX_ZIP_ENTRIES:
        raise refusal("zip_entries", file=zip_name, count=count, limit=MAX_ZIP_ENTRIES)
    try:
        archive = zipfile.ZipFile(file)
        members = [info for info in archive.infolist() if not info.is_dir() and not _clutter(info.filename)]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise refusal("zip", file=zip_name) from None
    unpacked, room = sum(info.file_size for info in archive.infolist()), max_bytes + MAX_METADATA_BYTES + ZIP_ROOM
    if unpacked > room:
        raise refusal("zip_size", file=zip_name, size=_megabytes(unpacked), limit=_megabytes(room))
    if any(info.flag_bits & ENCRYPTED for info in archive.infolist()):
        raise refusal("encrypted", file=zip_name)
    suffixes = sorted(PurePosixPath(info.filename).suffix.lower() for info in members)
    if suffixes != [".json", ".safetensors"]:
        shown = ", ".join(info.filename for info in members[:5]) + (", ..." if len(members) > 5 else "")
        raise refusal("zip_content", file=zip_name, members=shown or "nothing")
    pair = {}
    for info in members:
        suffix = PurePosixPath(info.filename).suffix.lower()
        limit = MAX_METADATA_BYTES if suffix == ".json" else max_bytes
        shown = f"{zip_name}: {info.filename}"
        if info.file_size > limit:
            raise refusal("too_big", file=shown, size=_megabytes(info.file_size), limit=_megabytes(limit))
        try:
            with archive.open(info) as member:
                data = member.read(limit + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, zlib.error):
            raise refusal("zip", file=zip_name) from None
        if len(data) > limit:
            raise refusal("too_big", file=shown, size=f"> {_megabytes(limit)}", limit=_megabytes(limit))
        pair[suffix] = (shown, data)
    return pair


def _clutter(member: str) -> bool:
    """What archivers add beside the files (macOS's resource forks, hidden files)."""
    return member.startswith("__MACOSX/") or PurePosixPath(member).name.startswith(".")


def _load_pair(pair: dict[str, tuple[str, bytes]]) -> Pretrained:
    """load_pretrained on the two files, written under fixed names into a fresh temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        for suffix, (_, content) in pair.items():
            (Path(folder) / f"{_LOADED_AS}{suffix}").write_bytes(content)
        try:
            return load_pretrained(_LOADED_AS, folder)
        except TranslatableError as error:
            problem = error.values.get("problem", "unreadable")
            wrong = ".json" if Path(error.values.get("file", "")).suffix == ".json" else ".safetensors"
            values = {k: v for k, v in error.values.items() if k not in ("name", "file", "command", "problem")}
            raise refusal(problem, file=pair[wrong][0], **values) from None
