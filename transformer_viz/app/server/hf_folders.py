"""Which folders of this server a link may open as a Hugging Face model: those under $TVIZ_HF_DIRS.

A link names a Hub id ("t5-small", "Helsinki-NLP/opus-mt-en-zh") or a folder. A folder outside the allowed ones
gets the same answer whether it exists or not, so that no link can find out which paths the server has.
"""

from __future__ import annotations

import os
from pathlib import Path

from transformer_viz.errors import TranslatableError
from transformer_viz.weights.pretrained import checkpoint_dirs

HF_DIRS_ENV = "TVIZ_HF_DIRS"  # os.pathsep-separated; default: the Hugging Face cache and the checkpoint folders


def allowed_folders(environ=None) -> list[Path]:
    """The folders (resolved) under which a Hugging Face model may be loaded from disk."""
    environ = os.environ if environ is None else environ
    value = environ.get(HF_DIRS_ENV)
    if value is None:
        from huggingface_hub.constants import HF_HUB_CACHE

        folders = [Path(HF_HUB_CACHE), *checkpoint_dirs(environ)]
    else:
        folders = [Path(entry) for entry in value.split(os.pathsep) if entry.strip()]
    return [folder.expanduser().resolve() for folder in folders]


def names_a_folder(name: str) -> bool:
    """Whether transformers would read `name` from disk: a path, not a Hub id ("org/name" or "name")."""
    return (os.path.isabs(name) or name.startswith((".", "~")) or "\\" in name or name.count("/") > 1
            or os.path.exists(name))


def check_folder(name: str, environ=None) -> None:
    """ValueError, the same for a folder that exists and one that does not, unless `name` is a Hub id or a
    folder under allowed_folders()."""
    if not names_a_folder(name):
        return
    where = Path(name).expanduser().resolve()
    if not any(where.is_relative_to(folder) for folder in allowed_folders(environ)):
        raise TranslatableError("detail.hf.not_offered", f"{name!r} is not a model this server offers: a folder "
                                "opens only under the server's Hugging Face folders (TVIZ_HF_DIRS).", name=name)
