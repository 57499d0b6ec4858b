"""A class server's worst case in memory: `python bench/bench_memory.py [--inputs 100]`.

Opens the Attention and Decoding pages (Streamlit's AppTest, in this one process, so the
server-wide caches fill as they would on a real server) for N distinct inputs at the largest
shape the sidebar allows: d_model 256, 16 heads, 6 + 6 layers, d_ff 512, max_len 64, random
weights, 63 letters each (greedy decoding up to 63 steps). Prints the resident memory (RSS)
and the seconds per input every 10 inputs. The caches are bounded (models.run_cache_bytes(),
figure_cache.FIGURE_CACHE_BYTES); with glibc's default of one malloc arena per thread, fragmentation adds
a few hundred MB on top (MALLOC_ARENA_MAX=2 keeps it level).
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # transformer_viz.app, when run as `python bench/bench_memory.py`

LARGEST = {"d_model": 256, "n_heads": 16, "n_encoder_layers": 6, "n_decoder_layers": 6, "d_ff": 512,
           "max_len": 64, "weights": "random"}


def rss_mib() -> float:
    """This process's resident memory in MiB (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / 2**20


def page_script(page: str) -> None:
    import importlib

    from transformer_viz.app.frame.sidebar import render_sidebar

    render_sidebar()
    importlib.import_module(f"transformer_viz.app.pages.{page}").render()


def main() -> None:
    from streamlit.testing.v1 import AppTest

    from transformer_viz.app.server.models import run_cache_bytes

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(1)  # a shared class server: one thread per rerun
    rng = random.Random(0)
    print(f"largest shape {LARGEST}; run cache budget {run_cache_bytes() / 2**20:.0f} MiB")
    print(f"RSS at start: {rss_mib():.0f} MiB")
    started, peak = time.perf_counter(), 0.0
    for i in range(1, args.inputs + 1):
        text = "".join(rng.choices(string.ascii_lowercase, k=63))
        for page in ("attention", "decoding"):
            at = AppTest.from_function(page_script, args=(page,), default_timeout=600)
            for key, value in {**LARGEST, "src_text": text}.items():
                at.session_state[key] = value
            at.run()
            if at.exception or at.error:
                raise SystemExit(f"input {i}, {page}: {[e.value for e in [*at.exception, *at.error]]}")
        peak = max(peak, rss_mib())
        if i % 10 == 0 or i == 1:
            elapsed = time.perf_counter() - started
            print(f"{i:4d} inputs: RSS {rss_mib():6.0f} MiB (peak {peak:.0f}), {elapsed / i:5.1f} s per input")


if __name__ == "__main__":
    main()
