"""How fast a student's page follows the teacher's: seconds from the teacher's input until the student's page
shows it, for each kind of move (page, layer, input), rooms in the server's process and in Redis.

    python bench/bench_rooms.py                 # 3 rounds of each move, both stores
    python bench/bench_rooms.py --rounds 10 --store memory

Teacher and student are two browser contexts of one Chromium on this machine: both browsers and the server draw
on the same cores, so the numbers include the student's own drawing. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devtools.browser import chromium, new_page, open_app
from devtools.redis_server import redis_missing_reason
from devtools.rooms import app_with_rooms, follow_seconds, start_room, teacher_moves


def measure(store: str, rounds: int) -> dict[str, list[float]]:
    seconds: dict[str, list[float]] = {"page": [], "layer": [], "input": []}
    with app_with_rooms(store) as (url, _), chromium() as browser:
        teacher, student = new_page(browser), new_page(browser)
        open_app(student, start_room(teacher, url))
        for _ in range((rounds + 2) // 3):  # teacher_moves makes three rounds
            for kind, action, shown in teacher_moves(teacher):
                took = follow_seconds(teacher, student, action, shown)
                if kind is not None:
                    seconds[kind].append(took)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="moves of each kind (rounded up to a multiple of 3)")
    parser.add_argument("--store", choices=("memory", "redis", "both"), default="both")
    args = parser.parse_args()
    stores = ("memory", "redis") if args.store == "both" else (args.store,)
    print("seconds from the teacher's input until the student's page shows it")
    print(f"{'store':8} {'move':6} {'n':>3} {'median':>7} {'max':>6}")
    for store in stores:
        if store == "redis" and redis_missing_reason():
            print(f"{store:8} skipped: {redis_missing_reason()}")
            continue
        for move, samples in measure(store, args.rounds).items():
            print(f"{store:8} {move:6} {len(samples):3d} {statistics.median(samples):7.2f} {max(samples):6.2f}")


if __name__ == "__main__":
    main()
