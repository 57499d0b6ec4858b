"""How fast N following students show the teacher's move, over Streamlit's websocket protocol (no browser).

    python bench/bench_follow.py                                # 1, 10 and 40 followers, both stores
    python bench/bench_follow.py --followers 3 --store memory --rounds 1
    python bench/bench_follow.py --followers 40 --store redis --replicas 2   # two app processes behind nginx

For each configuration the app is started afresh (`streamlit run app.py` on 127.0.0.1; for "redis" with a
throw-away redis-server and TVIZ_REDIS_URL). A teacher session opens Attention (and Overview: the pages' first
runs), starts a room and reads the students' link from its sidebar; N follower sessions open `/?room=LINKCODE`,
one every --join-gap s. Every session is a `LiveSession` (devtools/class_client.py): it reads its websocket all the
time, follows the server's `st.rerun` and `st.switch_page`, and keeps Streamlit's auto-rerun timers as the
frontend does: one `setInterval` per fragment (the follower's poll every 0.5 s, the teacher's section every 2 s)
that sends its rerun on a fixed clock whether or not the previous one has finished (the server folds a
pile-up into one run). Then --idle s of polling alone, then --rounds rounds of four moves by the teacher: type a
new source text, change the Attention page's layer, open Overview, open Attention again; after every follower
has shown a move, --pause s and up to 0.5 s more at random (a move falls anywhere between two polls).

The app pushes a move to its followers (transformer_viz/app/rooms/push.py: the server reruns their sessions, and
their browsers send nothing); with `--app` an app whose followers poll, the polls are measured as below.
Latency: from sending the teacher's move to a follower's first *finished* full run after it (script_finished),
which must show the move (the page, the source text box and, after a layer move, the layer box as the teacher
set them); a failure otherwise, and also when no such run comes within --deadline s, a follower's page shows an
exception, or a follower's page differs from the teacher's after the pause. Where the time goes:
  poll wait  move -> the follower's first full run after it, pushed by the server (its start), or the auto rerun
             (tick) that served the follower's poll that saw the new version (the poll ending in st.rerun): the
             teacher's run until it publishes, then the push thread's phase (0-0.1 s) or the timer's (0-0.5 s);
             below zero when a tick sent before the move waited in the server's queue until after the publish;
  server     that run's start or tick -> the follower's finished run: the server's queue, the poll, catch_up's
             rerun and the page's full rerun (every follower its own), behind the other followers' reruns;
  queue      an auto rerun's tick -> the start of the poll that served it (all polls of the moves);
  CPU        the app process's CPU (utime + stime, /proc): per fragment run while the followers only poll
             (the teacher's section included; where the server pushes, its only polls: the idle CPU per poll);
             during the moves, beyond the polls, per follower catch-up (the teacher's own runs included:
             noticeable with one follower only), and by kind of move.
Times are this process's: a run's start is when its new_session arrives, which the server may send late while
its script threads hold the interpreter. A run whose script_finished never comes (the next run starts first)
is a run whose end the server dropped (see LiveSession): a failure for a follower, counted and printed.
With Redis also: move -> publish -> the tick that saw it (the room's `updated` field), Redis reads per
catch-up (INFO commandstats), redis-server's CPU and a round trip from this process (HGETALL).
One deviation from a browser: the sessions claim no cached messages, so the server sends every element in full
where a browser that has had it gets a reference (the server still serializes every element once, to hash it).
All sessions live in this one asyncio process, which shares the cores with the server: its CPU is printed, and
the machine's load (/proc/loadavg, and the other processes' busy cores over the moves).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import itertools
import json
import math
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # devtools/
from devtools.class_client import LiveSession, RunFailed, RunSeen
from devtools.redis_server import redis_missing_reason, redis_server
from devtools.servers import Servers, cpu_seconds, get_page, machine_busy_seconds

WORDS = ("banana", "stressed", "racecar", "python", "kitten", "orange", "zebra", "hello")
ROOM_LINK = re.compile(r"[?&]room=([0-9A-Z]{16})")
REDIS_PREFIX = "tviz:room:"  # rooms/store.py's RedisRoomStore
REQUEST_TIMEOUT = 120  # seconds for one of the teacher's runs or a follower's first (a cold server is slow)


@dataclass
class Move:
    kind: str  # input, layer, page
    expected: dict  # what a follower's page must show: page, src_text, layer (after a layer move)
    sent: float = 0.0  # monotonic
    teacher_done: float = 0.0
    caught_up: float = 0.0  # when the last follower had shown it (or failed)
    cpu: float = 0.0  # the servers' CPU from sent to caught_up
    published: float | None = None  # monotonic, from the room's `updated` (Redis only)

    @property
    def label(self) -> str:
        return f"to {self.expected['page']}" if self.kind == "page" else self.kind


@dataclass
class Follower:
    """One follower's session and what it measured of each move."""

    index: int
    session: LiveSession
    move: Move | None = None  # the move it has not shown yet
    seen_poll: RunSeen | None = None  # the poll that saw the move
    asked: float = 0.0  # when the auto rerun it served was sent
    full_runs: int = 0  # since the move
    samples: list = field(default_factory=list)  # (move, latency, poll wait, server, full runs)
    failures: list = field(default_factory=list)  # (move, why)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def expect(self, move: Move) -> None:
        self.move, self.seen_poll, self.full_runs = move, None, 0
        self.done.clear()

    def on_run(self, run: RunSeen) -> None:
        move = self.move
        if move is None or run.started < move.sent:
            return
        if run.exceptions:
            self.fail(f"exception: {run.exceptions[0]}")
        elif run.full and run.lost:  # Streamlit dropped its end (counted in dropped_ends): the next poll draws
            return  # the page again, wait for that
        elif run.full:
            self.full_runs += 1
            if self.seen_poll is None:  # the poll before the first full run saw the new version (and called st.rerun)
                polls_since = [r for r in self.session.runs if not r.full and move.sent <= r.started < run.started]
                self.seen_poll = polls_since[-1] if polls_since else run  # or the server pushed this run
                self.asked = self.asked_at(self.seen_poll) if polls_since else run.started
            if run.status == ForwardMsg.FINISHED_SUCCESSFULLY:
                self.check(move, run)

    def check(self, move: Move, run: RunSeen) -> None:
        wrong = differences(self.session, move.expected)
        if wrong and (not move.teacher_done or run.started < move.teacher_done):
            self.seen_poll, self.full_runs = None, 0  # it started before the teacher's run had shared the move (the
            return  # previous catch-up drawn once more): the catch-up of this move is still to come
        if wrong:
            self.fail(f"its finished run shows {wrong}")
            return
        self.samples.append((move, run.finished - move.sent, self.asked - move.sent, run.finished - self.asked,
                             self.full_runs))
        self.move = None
        self.done.set()

    def asked_at(self, poll: RunSeen) -> float:
        """When the auto rerun a poll served left: the first tick after the previous poll started (the server folds
        ticks that wait into one run)."""
        previous = max((r.started for r in self.session.runs if not r.full and r.started < poll.started),
                       default=-math.inf)
        ticks = [t for t, _ in self.session.ticks if previous < t <= poll.started]
        return ticks[0] if ticks else poll.started

    def fail(self, why: str) -> None:
        if self.move is not None:
            self.failures.append((self.move, why))
        self.move = None
        self.done.set()


def shown(session: LiveSession) -> dict:
    """What a session's page shows of the view: the page, and the widgets a move changes (when drawn)."""
    values = {"page": session.page_path}
    for key in ("src_text", "layer", "head", "kind"):
        widget = session.widget(key)
        if widget is not None and widget.state is not None:
            values[key] = widget.state.string_value
    return values


def differences(session: LiveSession, expected: dict) -> dict:
    actual = shown(session)
    return {key: actual.get(key) for key, value in expected.items() if actual.get(key) != value}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else float("nan")


def polls(sessions: list[LiveSession], start: float, end: float) -> tuple[int, int, list[float]]:
    """Fragment runs (polls) that started within [start, end), the ticks sent then, and each poll's queue: its
    start less the oldest tick it served (the first tick after the previous poll started)."""
    runs = ticks = 0
    queue: list[float] = []
    for session in sessions:
        tick_times = sorted(t for t, _ in session.ticks)
        ticks += bisect.bisect_left(tick_times, end) - bisect.bisect_left(tick_times, start)
        previous = -math.inf
        for started in sorted(r.started for r in session.runs if not r.full):
            oldest = bisect.bisect_right(tick_times, previous)
            if start <= started < end:
                runs += 1
                if oldest < len(tick_times) and tick_times[oldest] <= started:
                    queue.append(started - tick_times[oldest])
            previous = started
    return runs, ticks, queue


class Redis:
    """The room's Redis, read by the bench: the publish time, command counts, redis-server's CPU, a round trip."""

    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url, decode_responses=True)

    def published(self, code: str) -> float | None:
        updated = self.client.hget(REDIS_PREFIX + code[:4], "updated")
        return None if updated is None else float(updated) - (time.time() - time.monotonic())

    def stats(self) -> tuple[dict[str, int], float]:
        commands = {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in
                    self.client.info("commandstats").items()}
        cpu = self.client.info("cpu")
        return commands, float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])

    def round_trip(self, code: str, times: int = 200) -> float:
        took = []
        for _ in range(times):
            start = time.perf_counter()
            self.client.hgetall(REDIS_PREFIX + code[:4])
            took.append(time.perf_counter() - start)
        return statistics.median(took)


class Lesson:
    """The teacher's session, the followers' and the moves."""

    def __init__(self, url: str, args, pids: list[int], redis: Redis | None) -> None:
        self.url, self.args, self.pids, self.redis = url, args, pids, redis
        self.rng = random.Random(args.seed)
        self.links: list[str] = []
        self.teacher = LiveSession(url, on_element=self.grab_link, timeout=REQUEST_TIMEOUT)
        self.followers: list[Follower] = []
        self.moves: list[Move] = []
        self.end_failures: list[str] = []
        self.link_code = ""

    def grab_link(self, kind: str, el, _fragment_id: str, _path: tuple) -> None:
        if kind == "code" and ROOM_LINK.search(el.code_text):
            self.links.append(ROOM_LINK.search(el.code_text)[1])

    async def start_room(self) -> None:
        self.teacher.cookie = await asyncio.to_thread(get_page, f"{self.url}/attention")
        await self.teacher.connect()
        await self.teacher.open("attention")
        for page in ("overview", "attention"):  # the pages' first runs (imports, figures) before the class
            await self.teacher.switch_page(page)
        await self.teacher.click("room_start")
        if not self.links:
            raise RunFailed("no room link in the teacher's sidebar after Start")
        self.link_code = self.links[-1]

    async def join(self, index: int) -> None:
        await asyncio.sleep(index * self.args.join_gap)
        follower = Follower(index, LiveSession(self.url, timeout=REQUEST_TIMEOUT))
        follower.session.on_run = follower.on_run
        follower.session.query = {"room": self.link_code}
        follower.session.cookie = await asyncio.to_thread(get_page, f"{self.url}/?room={self.link_code}")
        await follower.session.connect()
        await follower.session.open("")
        self.followers.append(follower)

    def next_move(self, kind: str, value: str) -> Move:
        teacher = shown(self.teacher)
        expected = {"page": teacher["page"], "src_text": teacher["src_text"]}
        if kind == "input":
            expected["src_text"] = value
        elif kind == "layer":
            expected["layer"] = value
        else:
            expected["page"] = value
        return Move(kind, expected)

    async def make(self, kind: str, value: str) -> None:
        move = self.next_move(kind, value)
        for follower in self.followers:
            follower.expect(move)
        cpu, move.sent = cpu_seconds(self.pids), time.monotonic()
        if kind == "page":
            result = await self.teacher.switch_page(value)
        else:
            result = await self.teacher.set_value("src_text" if kind == "input" else "layer", value)
        move.teacher_done = move.sent + result.latency
        if differences(self.teacher, move.expected):
            raise RunFailed(f"the teacher's own page shows {differences(self.teacher, move.expected)}")
        if self.redis is not None:
            move.published = self.redis.published(self.link_code)
        waits = [asyncio.wait_for(f.done.wait(), self.args.deadline) for f in self.followers]
        for follower, outcome in zip(self.followers, await asyncio.gather(*waits, return_exceptions=True),
                                     strict=True):
            if isinstance(outcome, Exception):
                follower.fail(f"no finished run showing it within {self.args.deadline:g} s"
                              + (f" ({follower.session.failure})" if follower.session.failure else ""))
        move.caught_up, move.cpu = time.monotonic(), cpu_seconds(self.pids) - cpu
        self.moves.append(move)
        await asyncio.sleep(self.args.pause)
        self.compare_with_teacher(move)
        await asyncio.sleep(self.rng.uniform(0, 0.5))

    def compare_with_teacher(self, move: Move) -> None:
        """After the pause every follower that showed the move must still show what the teacher's page shows."""
        teacher = shown(self.teacher)
        for follower in self.followers:
            if shown(follower.session) != teacher and not (follower.failures and follower.failures[-1][0] is move):
                self.end_failures.append(f"follower {follower.index} after {move.label}: shows "
                                         f"{shown(follower.session)}, the teacher {teacher}")

    async def rounds(self) -> None:
        for round_ in range(self.args.rounds):
            layer = self.teacher.widget("layer")
            other = [o for o in layer.options if o != layer.state.string_value] or layer.options
            await self.make("input", WORDS[round_ % len(WORDS)])
            await self.make("layer", self.rng.choice(other))
            await self.make("page", "overview")
            await self.make("page", "attention")

    async def close(self) -> None:
        for session in [self.teacher, *(f.session for f in self.followers)]:
            with contextlib.suppress(Exception):
                await session.close()


# --- one configuration ------------------------------------------------------------------------------------------
class Window:
    """A stretch of the lesson: the servers' CPU (each replica's), this process's, the machine's busy cores."""

    def __init__(self, pids: list[int]) -> None:
        self.pids, self.start, self.load = pids, time.monotonic(), [os.getloadavg()[0]]
        self._cpu = [cpu_seconds([pid]) for pid in pids]
        self._bench, self._busy = time.process_time(), machine_busy_seconds()

    def close(self) -> Window:
        self.end, self.wall = time.monotonic(), time.monotonic() - self.start
        self.per_replica = [cpu_seconds([pid]) - before for pid, before in zip(self.pids, self._cpu, strict=True)]
        self.cpu, self.bench = sum(self.per_replica), time.process_time() - self._bench
        self.other_load = (machine_busy_seconds() - self._busy - self.cpu - self.bench) / self.wall
        self.load.append(os.getloadavg()[0])
        return self


async def lesson(url: str, args, followers: int, pids: list[int], redis: Redis | None) -> dict:
    """The class: a room, its followers, a window of polling alone, then the moves."""
    room = Lesson(url, args, pids, redis)
    try:
        await room.start_room()
        await asyncio.gather(*(room.join(i) for i in range(followers)))
        await asyncio.sleep(args.settle)
        idle = Window(pids)
        await asyncio.sleep(args.idle)
        idle.close()
        redis_before, moves = redis.stats() if redis else None, Window(pids)
        await room.rounds()
        moves.close()
        redis_seen = (redis_before, redis.stats(), redis.round_trip(room.link_code)) if redis else None
        return {"room": room, "idle": idle, "moves": moves, "redis": redis_seen}
    finally:
        await room.close()


def measure(args, store: str, followers: int, replicas: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="tviz_follow_", dir=args.log_dir))
    with contextlib.ExitStack() as stack:
        environment, redis = {}, None
        if store == "redis":
            redis_url = stack.enter_context(redis_server())
            environment["TVIZ_REDIS_URL"] = redis_url
            redis = Redis(redis_url)
        servers = stack.enter_context(Servers(replicas, replicas > 1, args.app, workdir, env=environment))
        seen = asyncio.run(lesson(servers.url, args, followers, servers.app_pids, redis))
    topology = store + (f", {replicas} × app + nginx" if replicas > 1 else "")
    return {"topology": topology, "followers": followers, "logs": str(workdir)} | summary(**seen)


def cpu_by_move(room: Lesson, per_poll: float) -> dict[str, float]:
    """ms of server CPU per follower catch-up, by kind of move: the move's CPU less its polls', over followers."""
    everyone, spent = [room.teacher, *(f.session for f in room.followers)], {}
    for move in room.moves:
        beyond_polls = move.cpu - per_poll * polls(everyone, move.sent, move.caught_up)[0]
        spent.setdefault(move.label, []).append(1000 * beyond_polls / len(room.followers))
    return {label: statistics.mean(values) for label, values in spent.items()}


def dropped_ends(room: Lesson) -> dict[str, int]:
    """Runs whose end the server dropped (RunSeen.lost), by whose they were."""
    lost = [r for f in room.followers for r in f.session.runs if r.lost]
    return {"followers' full runs": sum(r.full for r in lost), "followers' polls": sum(not r.full for r in lost),
            "teacher's runs": sum(r.lost for r in room.teacher.runs)}


def summary(room: Lesson, idle: Window, moves: Window, redis: tuple | None) -> dict:
    samples = [s for f in room.followers for s in f.samples]  # (move, latency, poll wait, server, full runs)
    failures = [f"follower {f.index}, {move.label}: {why}" for f in room.followers for move, why in f.failures]
    sessions = [f.session for f in room.followers]
    per_poll = idle.cpu / max(1, polls([room.teacher, *sessions], idle.start, idle.end)[0])
    every_poll = polls([room.teacher, *sessions], moves.start, moves.end)[0]
    follow_polls, ticks, queue = polls(sessions, moves.start, moves.end)
    catch_ups = len(samples) + len(failures)
    result = {
        "moves": len(room.moves), "samples": len(samples), "failures": len(failures) + len(room.end_failures),
        "latency": [s[1] for s in samples], "poll_wait": [s[2] for s in samples], "server": [s[3] for s in samples],
        "by_kind": {kind: [s[1] for s in samples if s[0].kind == kind] for kind in ("input", "layer", "page")},
        "teacher": [m.teacher_done - m.sent for m in room.moves],
        "full_runs": statistics.mean(s[4] for s in samples) if samples else float("nan"),
        "cpu_by_move": cpu_by_move(room, per_poll),
        "polls_per_s": follow_polls / moves.wall, "follow_polls": follow_polls, "ticks": ticks, "queue": queue,
        "cpu": moves.cpu, "wall": moves.wall, "per_replica": moves.per_replica, "cpu_per_poll": 1000 * per_poll,
        "cpu_per_catch_up": 1000 * (moves.cpu - per_poll * every_poll) / max(1, catch_ups),
        "bench_cpu": moves.bench, "load": moves.load, "other_load": moves.other_load,
        "failure_examples": failures[:6] + room.end_failures[:4],
        "dropped_ends": dropped_ends(room),
    }
    if redis is not None:
        (before, cpu_before), (after, cpu_after), round_trip = redis
        commands = {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name)}
        result["redis"] = {
            "move_to_publish": [m.published - m.sent for m in room.moves if m.published is not None],
            "publish_to_poll": [s[0].sent + s[2] - s[0].published for s in samples if s[0].published is not None],
            "reads_per_catch_up": (commands.get("hgetall", 0) - follow_polls) / max(1, catch_ups),
            "commands": commands, "cpu": cpu_after - cpu_before, "round_trip_ms": 1000 * round_trip}
    return result


# --- the table -----------------------------------------------------------------------------------------------------
COLUMNS = ("rooms", "followers", "moves", "samples", "failures", "p50 (s)", "p95 (s)", "max (s)",
           "poll wait p50 / p95 (s)", "server p50 / p95 (s)", "server CPU (s) / window (s)", "CPU per poll (ms)",
           "CPU per catch-up (ms)", "load (1 min)")


def milliseconds(estimate: float) -> str:
    """A CPU estimate beyond the polls; "–" when the polls' share (CPU per poll while idle) exceeds the whole."""
    return f"{estimate:.0f}" if estimate >= 0 else "–"


def row(r: dict) -> str:
    def pair(values: list[float]) -> str:
        return f"{percentile(values, 0.5):.2f} / {percentile(values, 0.95):.2f}"

    cells = (r["topology"], r["followers"], r["moves"], r["samples"], r["failures"],
             f"{percentile(r['latency'], 0.5):.2f}", f"**{percentile(r['latency'], 0.95):.2f}**",
             f"{max(r['latency'], default=float('nan')):.2f}", pair(r["poll_wait"]), pair(r["server"]),
             f"{r['cpu']:.1f} / {r['wall']:.0f}", f"{r['cpu_per_poll']:.1f}", milliseconds(r["cpu_per_catch_up"]),
             f"{r['load'][0]:.1f}–{r['load'][1]:.1f}")
    return "| " + " | ".join(map(str, cells)) + " |"


def details(r: dict) -> str:
    def p(values: list[float], digits: int = 2) -> str:
        return f"p50 {percentile(values, 0.5):.{digits}f} p95 {percentile(values, 0.95):.{digits}f}"

    kinds = ", ".join(f"{kind} {p(values)}" for kind, values in r["by_kind"].items() if values)
    cpu_by_move = ", ".join(f"{move} {milliseconds(ms)}" for move, ms in r["cpu_by_move"].items())
    lines = [f"- {r['topology']}, {r['followers']} followers: by move {kinds}",
             f"  teacher's run {p(r['teacher'])} s; {r['full_runs']:.1f} full runs a catch-up, CPU per catch-up "
             f"(ms) {cpu_by_move}; polls {r['polls_per_s']:.1f}/s "
             f"({r['follow_polls']} runs for {r['ticks']} ticks), queue tick -> poll {p(r['queue'], 3)} s",
             f"  server CPU per replica {[round(c, 1) for c in r['per_replica']]} s; "
             f"bench process CPU {r['bench_cpu']:.1f} s; other load {r['other_load']:.2f} cores; logs {r['logs']}"]
    if "redis" in r:
        redis = r["redis"]
        lines.append(f"  Redis: move -> publish {p(redis['move_to_publish'])} s, publish -> the tick that saw it "
                     f"{p(redis['publish_to_poll'])} s; {redis['reads_per_catch_up']:.1f} reads (HGETALL) a "
                     f"catch-up beyond its poll; round trip {redis['round_trip_ms']:.2f} ms; redis-server CPU "
                     f"{redis['cpu']:.2f} s; commands {redis['commands']}")
    if any(r["dropped_ends"].values()):
        lines.append(f"  runs whose end (script_finished) the server dropped: {r['dropped_ends']}")
    lines += [f"  failure: {f}" for f in r["failure_examples"]]
    return "\n".join(lines)


def interrupt(*_args) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--followers", type=int, nargs="+", default=[1, 10, 40])
    parser.add_argument("--store", nargs="+", choices=["memory", "redis"], default=["memory", "redis"])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1],
                        help="app processes (more than one: behind nginx, rooms in Redis only)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of four moves (input, layer, page, page)")
    parser.add_argument("--pause", type=float, default=1.5, help="seconds after everyone showed a move (+0-0.5 s)")
    parser.add_argument("--idle", type=float, default=8, help="seconds of polling alone (CPU per poll)")
    parser.add_argument("--settle", type=float, default=2, help="seconds between the last join and the idle window")
    parser.add_argument("--join-gap", type=float, default=0.25, help="seconds between two followers' arrivals")
    parser.add_argument("--deadline", type=float, default=20, help="seconds a follower may take to show a move")
    parser.add_argument("--app", default="app.py")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-dir", default=None, help="where the server's log goes (default: a temp dir)")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, interrupt)  # stop the servers on the way out, as on Ctrl-C
    print(f"# bench_follow {time.strftime('%Y-%m-%d %H:%M')}: {args.rounds} rounds of 4 moves, "
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
