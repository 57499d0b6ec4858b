"""What one server allows, in one place: environment variables read once, on first use (`limits()`).

    TVIZ_TRAININGS_AT_ONCE=2 TVIZ_TRAIN_STEPS=1500 transformer-viz

The sidebar's ranges, the model service, the training queue and the caches all read `limits()`; the pages show
them when a link or a setting asks for more. A value that is not a number in range stops the server with a
sentence naming the variable (`transformer-viz` reads them before starting Streamlit). A test that changes a
variable calls `limits.cache_clear()` to have it read again.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from transformer_viz.config import SIZE_LIMITS

CGROUP = Path("/sys/fs/cgroup")  # in a container: the container's own control group


def cpu_quota(cgroup: Path | None = None) -> float | None:
    """The CPUs a container's quota allows (`docker run --cpus 1.5`: 1.5); None without a quota.

    cgroup v2 keeps it in cpu.max ("150000 100000": quota and period in µs, "max" for none), cgroup v1 in
    cpu/cpu.cfs_quota_us (-1 for none) and cpu/cpu.cfs_period_us.
    """
    cgroup = cgroup or CGROUP
    try:
        if (cgroup / "cpu.max").is_file():
            quota, period = (cgroup / "cpu.max").read_text().split()
        else:
            quota, period = ((cgroup / "cpu" / f"cpu.cfs_{part}_us").read_text() for part in ("quota", "period"))
        return None if quota.strip() in ("max", "-1") else int(quota) / int(period)
    except (OSError, ValueError, ZeroDivisionError):  # no such file (not Linux, no cgroup), or not understood
        return None


def usable_cores(cgroup: Path | None = None) -> int:
    """The cores this process may use: its CPU set (a container's, not the host's), at most the whole CPUs of its
    CPU quota (`--cpus`, compose's `cpus`: the CPU set does not show it), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = cpu_quota(cgroup)
    return cores if quota is None else max(1, min(cores, int(quota)))


@dataclass(frozen=True)
class ServerLimits:
    """Caps of one server process (defaults: a 2-core machine hosting a class of 40)."""

    d_model: int = 256  # the model dimension
    heads: int = 16  # attention heads
    layers: int = 6  # encoder layers, and decoder layers
    d_ff: int = 512  # the feed-forward layer's width
    input_tokens: int = 64  # max_len: the longest input a model may be built for
    train_steps: int = 3000  # steps of one training
    training_budget: float = 4e10  # parameters x steps x batch of one training: about two minutes of a core
    trainings_at_once: int = 0  # trainings running at once, each in its own process (0: one per core)
    training_processes: int = 1  # 1: each training in a worker process; 0: in threads of the server (to compare)
    run_cache_mib: int = 512  # traces kept for all sessions
    hf_downloads: int = 2  # 1: any session may let a Hugging Face model be downloaded; 2: only one whose browser is
    #                        on the server's own computer (models.hf_downloads_here); 0: only models already here
    hf_parameters: float = 5e8  # the largest Hugging Face model loaded (parameters; float32: 4 bytes each)
    room_idle_minutes: int = 30  # a class room ends this long after the last sign of its teacher
    rooms: int = 1000  # class rooms kept at once (in this process, or in Redis for all replicas)
    room_push: int = 1  # 1: the server pushes a room's changes to its students (rooms/push.py); 0: they poll
    upload_session_mib: int = 48  # uploaded files one session holds at once (three of the largest the app reads)
    upload_address_mib: int = 160  # uploaded files all sessions of one browser address hold at once (uploads.py)

    def __post_init__(self):
        if self.trainings_at_once == 0:
            object.__setattr__(self, "trainings_at_once", usable_cores())

    @classmethod
    def from_environment(cls, environment: Mapping[str, str] = os.environ) -> ServerLimits:
        """The limits, each from TVIZ_<NAME> when set (e.g. TVIZ_D_MODEL, TVIZ_TRAININGS_AT_ONCE)."""
        values = {}
        for field in fields(cls):
            variable = env_name(field.name)
            text = environment.get(variable, "").strip()
            if not text:
                continue
            least, most = RANGES[field.name]
            try:
                value = float(text) if field.type == "float" else int(text)
            except ValueError:
                value = None
            if value is None or not least <= value <= most:
                kind = "a number" if field.type == "float" else "a whole number"
                raise ValueError(f"{variable}={text!r}: expected {kind} from {least:g} to {most:g}.")
            values[field.name] = value
        return cls(**values)


def env_name(field: str) -> str:
    return f"TVIZ_{field.upper()}"


# What each limit may be set to: at least the shipped models' shape (d_model 64, 4 heads, 2 layers, d_ff 128,
# 16 tokens), at most the model's own limits.
RANGES = {"d_model": (64, SIZE_LIMITS["d_model"]), "heads": (4, SIZE_LIMITS["n_heads"]),
          "layers": (2, SIZE_LIMITS["n_encoder_layers"]), "d_ff": (128, SIZE_LIMITS["d_ff"]),
          "input_tokens": (16, SIZE_LIMITS["max_len"]), "train_steps": (100, 100_000), "training_budget": (1e8, 1e13),
          "trainings_at_once": (0, 256), "training_processes": (0, 1), "run_cache_mib": (64, 65_536),
          "hf_downloads": (0, 2), "hf_parameters": (1e6, 1e11), "room_idle_minutes": (1, 24 * 60),
          "rooms": (1, 1_000_000), "room_push": (0, 1), "upload_session_mib": (17, 65_536),
          "upload_address_mib": (17, 65_536)}  # 17: one file of the largest the app reads and its multipart frame


@functools.cache
def limits() -> ServerLimits:
    """This server's limits, read from the environment at the first call (`limits.cache_clear()` reads them again)."""
    return ServerLimits.from_environment()
