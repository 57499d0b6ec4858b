"""How fast a class's answers reach the teacher's screen, and the teacher's Reveal every student's, over Streamlit's
websocket protocol (no browser).

    python bench/bench_answers.py                           # 40 followers: in the process, Redis, Redis on 2 + nginx
    python bench/bench_answers.py --followers 5 --store memory
    python bench/bench_answers.py --store redis --replicas 2 --step 6

For each configuration the app is started afresh (`streamlit run app.py` on 127.0.0.1; for "redis" with a
throw-away redis-server and TVIZ_REDIS_URL; `--replicas 2`: two app processes behind Debian's nginx, as
bench_follow.py). A teacher session opens the lesson at --step (5: a number, how many cells; 6: a choice of head)
and starts a room; N follower sessions open the room's link, one every --join-gap s. Every session is a
`LiveSession` (devtools/class_client.py): it reads its websocket all the time and keeps Streamlit's auto-rerun
timers as the frontend does (the teacher's class fragment every answering.CLASS_SECONDS, its room section's); the
followers are pushed by the server (rooms/push.py) and send nothing unless they answer.
After --idle s of the teacher's timers alone (its CPU per second), each follower answers once at a random moment of
a --window s window (a number 0..8, or one of the pills), as the frontend sends a widget change. Measured:
  answer -> teacher  from sending the k-th answer (in time) to the first of the teacher's class charts that counts
                     k answers or more ("The class's answers (k)"), as it arrives; "stored": from the end of that
                     student's own run (the answer is in the store by then) instead;
  reveal -> student  from the teacher's Reveal (opening the step's "Reveal the answer", a keyed expander) to the
                     arrival of the student's verdict ("You said X; the model says Y"), which must name its answer
                     and say "right" exactly when X is Y;
  CPU                the app processes' CPU (utime + stime, /proc): over the answers (from the first to the teacher's
                     chart counting all of them), less the idle rate of the teacher's timers, per answer; over the
                     reveal (to the last verdict), per student.
A student whose answer never shows, or whose verdict does not arrive within --deadline s, or a run with an
exception, is a failure (counted and printed). All sessions live in this one asyncio process, which shares the cores
with the server: its CPU is printed, and the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # devtools/
from bench_follow import ROOM_LINK, Window, percentile

from devtools.class_client import LiveSession, RunFailed, RunSeen
from devtools.redis_server import redis_missing_reason, redis_server
from devtools.servers import Servers, get_page

REQUEST_TIMEOUT = 120  # seconds for one of the teacher's runs or a follower's first (a cold server is slow)
CLASS_CHART = "class_answers"  # the teacher's chart (rooms/answering.py)
COUNTED = re.compile(r"The class's answers \((\d+)\)")  # its title (English)
VERDICT = re.compile(r"You said (.+?); the model says (.+?)(: right)?\.")


@dataclass
class Student:
    index: int
    session: LiveSession
    said: str = ""  # the label of the answer, as the verdict names it
    sent: float = 0.0  # monotonic: the answer left
    stored: float = 0.0  # its run finished (the answer is in the store)
    verdict: tuple[float, str, str, bool] | None = None  # (arrival, said, truth, right) after the reveal
    exceptions: list = field(default_factory=list)
    revealing: bool = False  # the teacher has revealed: verdicts count from now on

    def on_element(self, kind: str, el, _fragment_id: str, _path: tuple) -> None:
        if self.revealing and self.verdict is None and kind == "markdown":
            found = VERDICT.search(el.body)
            if found:
                self.verdict = time.monotonic(), found[1], found[2], bool(found[3])

    def on_run(self, run: RunSeen) -> None:
        self.exceptions += run.exceptions

    def answer_widget(self, step: int):
        return next((w for w in self.session.widgets.values() if w.key.startswith(f"answer_{step}-")), None)


class Class:
    """The teacher's session, the students' and what the teacher's page showed of their answers."""

    def __init__(self, url: str, args) -> None:
        self.url, self.args, self.rng = url, args, random.Random(args.seed)
        self.teacher = LiveSession(url, on_element=self.on_teacher_element, timeout=REQUEST_TIMEOUT)
        self.teacher.on_run = self.on_teacher_run
        self.links: list[str] = []
        self.counted: list[tuple[float, int]] = []  # (arrival, n) of each of the teacher's class charts
        self.teacher_exceptions: list = []
        self.students: list[Student] = []
        self.link_code = ""

    def on_teacher_element(self, kind: str, el, _fragment_id: str, _path: tuple) -> None:
        if kind == "code" and ROOM_LINK.search(el.code_text):
            self.links.append(ROOM_LINK.search(el.code_text)[1])
        elif kind == "plotly_chart" and el.id.endswith(CLASS_CHART):
            found = COUNTED.search(el.spec)
            if found:
                self.counted.append((time.monotonic(), int(found[1])))

    def on_teacher_run(self, run: RunSeen) -> None:
        self.teacher_exceptions += run.exceptions

    async def start_room(self) -> None:
        self.teacher.query = {"lesson_step": str(self.args.step)}
        self.teacher.cookie = await asyncio.to_thread(get_page, f"{self.url}/?lesson_step={self.args.step}")
        await self.teacher.connect()
        await self.teacher.open("")
        await self.teacher.click("room_start")
        if not self.links:
            raise RunFailed("no room link in the teacher's sidebar after Start")
        self.link_code = self.links[-1]

    async def join(self, index: int) -> None:
        await asyncio.sleep(index * self.args.join_gap)
        student = Student(index, LiveSession(self.url, timeout=REQUEST_TIMEOUT))
        student.session.on_element, student.session.on_run = student.on_element, student.on_run
        student.session.query = {"room": self.link_code}
        student.session.cookie = await asyncio.to_thread(get_page, f"{self.url}/?room={self.link_code}")
        await student.session.connect()
        await student.session.open("")
        self.students.append(student)

    async def answer(self, student: Student, at: float) -> None:
        await asyncio.sleep(at)
        widget = student.answer_widget(self.args.step)
        if widget is None:
            student.exceptions.append(f"no answer box for step {self.args.step}")
            return
        if widget.kind == "number_input":
            value = self.rng.randint(0, 8)
            student.said = str(value)
        else:  # pills: the chosen option's label
            value = [self.rng.choice(widget.options)]
            student.said = value[0]
        student.sent = time.monotonic()
        result = await student.session.set_value(widget.key, value)
        student.stored = student.sent + result.latency

    async def answers(self) -> None:
        moments = sorted(self.rng.uniform(0, self.args.window) for _ in self.students)
        await asyncio.gather(*(self.answer(s, at) for s, at in zip(self.students, moments, strict=True)))
        deadline = time.monotonic() + self.args.deadline
        while self.counted_at(len(self.students)) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    def counted_at(self, n: int, since: float = 0.0) -> float | None:
        """When the teacher's chart first counted n answers or more (after `since`)."""
        return next((at for at, seen in self.counted if seen >= n and at >= since), None)

    async def reveal(self) -> float:
        key = f"lesson_reveal_{self.args.step}"
        if self.teacher.widget(key) is None:
            raise RunFailed(f"no keyed expander {key!r} on the teacher's page (this Streamlit draws none?)")
        for student in self.students:
            student.revealing = True
        sent = time.monotonic()
        await self.teacher.set_value(key, True)
        deadline = sent + self.args.deadline
        while any(s.verdict is None for s in self.students if s.said) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return sent

    async def close(self) -> None:
        for session in [self.teacher, *(s.session for s in self.students)]:
            with contextlib.suppress(Exception):
                await session.close()


async def lesson(url: str, args, followers: int, pids: list[int]) -> dict:
    room = Class(url, args)
    try:
        await room.start_room()
        await asyncio.gather(*(room.join(i) for i in range(followers)))
        await asyncio.sleep(args.settle)
        idle = Window(pids)
        await asyncio.sleep(args.idle)
        idle.close()
        answering = Window(pids)
        await room.answers()
        answering.close()
        await asyncio.sleep(args.pause)
        revealing = Window(pids)
        reveal_sent = await room.reveal()
        revealing.close()
        return summary(room, idle, answering, revealing, reveal_sent)
    finally:
        await room.close()


def summary(room: Class, idle: Window, answering: Window, revealing: Window, reveal_sent: float) -> dict:
    answered = sorted((s for s in room.students if s.sent), key=lambda s: s.sent)
    shown, shown_stored, failures = [], [], []
    for k, student in enumerate(answered, start=1):
        at = room.counted_at(k, since=student.sent)
        if at is None:
            failures.append(f"answer {k} (student {student.index}) never counted on the teacher's page")
            continue
        shown.append(at - student.sent)
        shown_stored.append(max(0.0, at - student.stored))
    revealed = []
    for student in answered:
        if student.verdict is None:
            failures.append(f"student {student.index}: no verdict within the deadline")
            continue
        at, said, truth, right = student.verdict
        if said != student.said or right != (said == truth):
            failures.append(f"student {student.index} answered {student.said!r}; the verdict says {said!r} / "
                            f"{truth!r} right={right}")
        revealed.append(at - reveal_sent)
    failures += [f"student {s.index}: {e}" for s in room.students for e in s.exceptions]
    failures += [f"teacher: {e}" for e in room.teacher_exceptions]
    idle_rate = idle.cpu / idle.wall
    n = max(1, len(answered))
    return {
        "answers": len(answered), "shown": shown, "shown_stored": shown_stored, "revealed": revealed,
        "own_run": [s.stored - s.sent for s in answered], "failures": failures,
        "idle_cpu_per_s": idle_rate, "answer_cpu": answering.cpu, "answer_wall": answering.wall,
        "cpu_per_answer_ms": 1000 * (answering.cpu - idle_rate * answering.wall) / n,
        "reveal_cpu": revealing.cpu, "reveal_wall": revealing.wall,
        "cpu_per_reveal_ms": 1000 * (revealing.cpu - idle_rate * revealing.wall) / n,
        "per_replica": [round(c, 1) for c in answering.per_replica], "bench_cpu": answering.bench + revealing.bench,
        "load": [answering.load[0], revealing.load[-1]], "other_load": answering.other_load,
    }


def measure(args, store: str, followers: int, replicas: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="tviz_answers_", dir=args.log_dir))
    with contextlib.ExitStack() as stack:
        environment = {}
        if store == "redis":
            environment["TVIZ_REDIS_URL"] = stack.enter_context(redis_server())
        servers = stack.enter_context(Servers(replicas, replicas > 1, args.app, workdir, env=environment))
        result = asyncio.run(lesson(servers.url, args, followers, servers.app_pids))
    topology = ("in-process" if store == "memory" else "Redis") + (f", {replicas} processes + nginx"
                                                                   if replicas > 1 else "")
    return {"topology": topology, "followers": followers, "step": args.step, "logs": str(workdir)} | result


COLUMNS = ("rooms", "followers", "answer → teacher p50 / p95 / max (s)", "from stored p50 / p95 (s)",
           "reveal → student p50 / p95 / max (s)", "server CPU per answer (ms)", "per student's reveal (ms)",
           "failures", "load (1 min)")


def row(r: dict) -> str:
    def three(values: list[float]) -> str:
        return (f"{percentile(values, 0.5):.2f} / **{percentile(values, 0.95):.2f}** / "
                f"{max(values, default=float('nan')):.2f}")

    cells = (r["topology"], r["followers"], three(r["shown"]),
             f"{percentile(r['shown_stored'], 0.5):.2f} / {percentile(r['shown_stored'], 0.95):.2f}",
             three(r["revealed"]), f"{r['cpu_per_answer_ms']:.0f}", f"{r['cpu_per_reveal_ms']:.0f}",
             f"{len(r['failures'])} / {r['answers']}", f"{r['load'][0]:.1f}–{r['load'][1]:.1f}")
    return "| " + " | ".join(map(str, cells)) + " |"


def details(r: dict) -> str:
    lines = [f"- {r['topology']}, {r['followers']} followers, step {r['step']}: a student's own answer run p50 "
             f"{percentile(r['own_run'], 0.5):.2f} p95 {percentile(r['own_run'], 0.95):.2f} s; server CPU "
             f"{r['answer_cpu']:.1f} s over the answers' {r['answer_wall']:.1f} s (per replica {r['per_replica']}), "
             f"{r['reveal_cpu']:.1f} s over the reveal's {r['reveal_wall']:.1f} s; idle (the teacher's timers) "
             f"{1000 * r['idle_cpu_per_s']:.0f} ms/s; bench process CPU {r['bench_cpu']:.1f} s; other load "
             f"{r['other_load']:.2f} cores; logs {r['logs']}"]
    return "\n".join(lines + [f"  failure: {f}" for f in r["failures"][:8]])


def interrupt(*_args) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--followers", type=int, nargs="+", default=[40])
    parser.add_argument("--store", nargs="+", choices=["memory", "redis"], default=["memory", "redis"])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2],
                        help="app processes (more than one: behind nginx, rooms in Redis only)")
    parser.add_argument("--step", type=int, choices=[5, 6], default=5, help="5: a number; 6: a choice (pills)")
    parser.add_argument("--window", type=float, default=10, help="seconds over which the students answer")
    parser.add_argument("--pause", type=float, default=2, help="seconds between the last answer shown and Reveal")
    parser.add_argument("--idle", type=float, default=6, help="seconds of the teacher's timers alone (CPU)")
    parser.add_argument("--settle", type=float, default=3, help="seconds between the last join and the idle window")
    parser.add_argument("--join-gap", type=float, default=0.25, help="seconds between two followers' arrivals")
    parser.add_argument("--deadline", type=float, default=30, help="seconds an answer or a verdict may take")
    parser.add_argument("--app", default="app.py")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-dir", default=None, help="where the server's log goes (default: a temp dir)")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, interrupt)  # stop the servers on the way out, as on Ctrl-C
    print(f"# bench_answers {time.strftime('%Y-%m-%d %H:%M')}: step {args.step}, answers over {args.window:g} s, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", flush=True)
    results = []
    for store, replicas, followers in itertools.product(args.store, args.replicas, args.followers):
        if store == "redis" and redis_missing_reason():
            print(f"redis skipped: {redis_missing_reason()}")
            continue
        if store == "memory" and replicas > 1:
            continue  # rooms in a process are that replica's only: replicas share them in Redis
        result = measure(args, store, followers, replicas)
        results.append(result)
        print(row(result) + "\n" + details(result), flush=True)
    print("\n| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS))
    print("\n".join(row(r) for r in results))
    print("\n" + "\n".join(details(r) for r in results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
