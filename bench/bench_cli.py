"""How fast `transformer-viz` answers when it is not asked to serve: `python bench/bench_cli.py [runs]`.

Runs `transformer-viz --help`, a bad option (`--prot 8501`) and a bad limit (`TVIZ_D_MODEL=lots`) in fresh
processes, `runs` times each (default 5), and prints the median wall time of each and the first run's (a cold
disk shows there). Budget: under 1 s. The command must import torch and Streamlit only when it serves
(tests/test_launch.py checks that it does not; this prints how long it takes).
"""

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("transformer-viz")  # the console script of this interpreter's install
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "transformer_viz"]
CASES = {
    "--help": ([*COMMAND, "--help"], {}),
    "a bad option": ([*COMMAND, "--prot", "8501"], {}),
    "a bad limit": (COMMAND, {"TVIZ_D_MODEL": "lots"}),
}


def seconds(command: list[str], variables: dict[str, str]) -> float:
    """Wall time of one run of `command` in a fresh process, until it exits (its output is dropped)."""
    start = time.perf_counter()
    subprocess.run(command, env={**os.environ, **variables}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    return time.perf_counter() - start


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(f"{' '.join(COMMAND)}: median of {runs} runs (first run)")
    for case, (command, variables) in CASES.items():
        times = [seconds(command, variables) for _ in range(runs)]
        print(f"  {case:<13} {statistics.median(times):6.2f} s  ({times[0]:.2f} s)")


if __name__ == "__main__":
    main()
