"""A class of N students on one server, measured: `python bench/bench_class.py`.

For every configuration (topology × N students × K of them training) the bench starts the app afresh
(`streamlit run app.py` on 127.0.0.1, or two of them behind Debian's nginx with `--replicas 2`), warms it up with
one visit of every page, then runs N simulated students for `--duration` seconds. A student speaks Streamlit's own
websocket protocol (devtools/class_client.py; no browser), all of them in this one asyncio process, loopback only:

  non-trainers  GET /attention (the page's HTML; behind nginx this sets the replica cookie), open the websocket, run
                the page; then, page after page (--pages), with a think time (--think) before every action: switch
                page, type a text of their own into the sidebar's source text, change layer, head and attention kind
                where the page has them (fragment reruns on the Attention page).
  trainers      open /training and press Train with the default settings, again and again (a pause between runs);
                at the end of the window a running training is stopped (Streamlit's stop_script).

Latency = sending the rerun BackMsg → its script_finished. The table's p50 / p95 / max are the non-trainers'
interactions (a trainer's Train press lasts the whole training; its speed is the "training steps/s" column:
steps per second of one run, averaged over runs, and all trainers' steps per second of window).
A failure is an interaction without script_finished within --timeout, a closed websocket, an exception or error
box in the page, or a page whose "Source tokens" do not spell the input box's text.

Cross-session check: student i types only texts that start with its own tag "zq" + two letters ("zqab..."), a
pair that no English text has. Every element a student receives is scanned (text boxes, token chips, Markdown,
alerts, options, the tick labels of every Plotly figure, also reversed: reverse is the default task) for another
student's tag; a trained model must show (the "trained by you" weights choice, the trained banner) only to
trainers. The server CPU column sums utime + stime of the app process(es) over the window (nginx's is reported
beside); RSS is the peak of the sum over the window. CPU per interaction is in parentheses when it includes
training. This bench process shares the cores (its CPU is printed), and so may other work on the machine: "other
load" is the machine's busy CPU (/proc/stat) less the servers' and the bench's, in cores, over the window.

  python bench/bench_class.py --students 1 10 20 40 --trainers 0 1 5 --replicas 1 --duration 60
  python bench/bench_class.py --students 40 --trainers 0 5 --replicas 1 2 --duration 60  # 2: behind nginx
  python bench/bench_class.py --students 40 --trainers 0 --think 0.5 2                  # a class clicking fast
  python bench/bench_class.py --students 40 --trainers 5 --training-in processes threads # where trainings run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import itertools
import json
import math
import os
import random
import re
import resource
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# The app is never imported: only what a browser sees is used.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # devtools/
from devtools.class_client import RunFailed, Session
from devtools.servers import Servers, cpu_seconds, get_page, machine_busy_seconds, rss_mib

PAGES = ("attention", "masks", "head", "decoding", "embeddings", "layers", "overview", "training")
WORDS = ("hello", "banana", "stressed", "python", "racecar", "zebra", "orange", "kitten")
# What the app shows (its English catalog): the weights choice and the banner of a model trained in the session.
TRAINED_OPTION = re.compile(r"^trained by you")
TRAINED_TEXT = re.compile(r"Weights you trained on the Training page|Trained \d+ steps in")
BUSY_TEXT = "already training"
SOURCE_LABEL = "Source tokens"
TAG = re.compile(r"zq[a-z]{2}")
CHIP_ROW = re.compile(r'<span class="lbl">(.*?)</span>(.*?)</div>', re.S)
CHIP = re.compile(r'<span class="tv-chip[^"]*">(.*?)<sub>')
STEP = re.compile(r"Step (\d+) / (\d+)")


WARM_UP_TEXT = "zqzzhello"  # the warm-up visit's input: nobody else may see it either


def tag_of(index: int) -> str:
    """Student i's tag: "zq" and two letters, both different from every other student's up to 26 students."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    first = index % 26
    return "zq" + letters[first] + letters[(first + 1 + index // 26) % 26]


def special(token: str) -> bool:
    return token.startswith("<") and token.endswith(">")


# --- what each student checks in what it receives -------------------------------------------------------------
@dataclass
class Checker:
    """The cross-session check of one student (its own tag; whether it trains), fed every element received."""

    tag: str
    trainer: bool
    typed: dict  # tag -> every text typed so far with it (all students: shared)
    session: Session | None = None
    violations: list = field(default_factory=list)  # (tag, where, what)
    problems: list = field(default_factory=list)  # errors of the current run (exception, error box, wrong view)
    sources_checked: int = 0  # positive control: "Source tokens" rows compared with the input box
    trained_seen: int = 0  # positive control: a trainer saw its trained model
    busy: int = 0  # "already training" answers

    def __call__(self, kind: str, el, fragment_id: str, path: tuple) -> None:
        texts: list[str] = []
        if kind in ("text_input", "text_area"):
            texts.append(el.value if el.set_value else el.default)
        elif kind == "html" and "tv-chips" in el.body:
            for label, row in CHIP_ROW.findall(el.body):
                tokens = [html.unescape(t) for t in CHIP.findall(row)]
                joined = "".join(t for t in tokens if not special(t))
                texts.append(joined)
                if html.unescape(label) == SOURCE_LABEL and "<unk>" not in tokens:
                    self.check_source(joined)
        elif kind in ("markdown", "heading", "alert", "text", "code", "html"):
            texts.append(el.body)
            if kind == "alert":
                if el.format == el.ERROR:
                    self.problems.append(f"error box: {el.body[:120]}")
                if BUSY_TEXT in el.body:
                    self.busy += 1
        elif kind == "metric":
            texts += [el.label, el.body]
        elif kind in ("selectbox", "radio", "multiselect"):
            texts += list(el.options)
            tokens = [o.split(": ", 1)[1] for o in el.options if re.match(r"\d+: ", o)]  # "3: l" (query, key)
            texts.append("".join(tokens))
            if el.id.endswith("-weights") and any(TRAINED_OPTION.match(o) for o in el.options):
                self.trained("the weights choice offers a trained model")
        elif kind == "button_group":
            texts += [o.content for o in el.options]
        elif kind == "plotly_chart":
            texts += figure_texts(json.loads(el.spec))
        elif kind == "progress":
            texts.append(el.text)
        elif kind == "exception":
            self.problems.append(f"exception: {el.type}: {el.message[:120]}")
        for text in texts:
            if "zq" in text or "qz" in text:
                self.scan(kind, text)
            if TRAINED_TEXT.search(text):
                self.trained(f"{kind}: {text[:60]!r}")

    def scan(self, kind: str, text: str) -> None:
        """Another student's whole text (or its reverse: the output of reverse) in `text` is a violation. Whole
        texts, not tags alone: a model's output may spell "zq.." by chance (a random model, a mistake), never a
        whole text of nine letters or more that only another student typed."""
        for candidate in (text, text[::-1]):
            for found in TAG.finditer(candidate):
                tag = found.group()
                if tag != self.tag and any(candidate.startswith(t, found.start()) for t in self.typed.get(tag, ())):
                    self.violations.append((self.tag, kind, f"{tag}'s text in {text[:60]!r}"))

    def trained(self, what: str) -> None:
        if self.trainer:
            self.trained_seen += 1
        else:
            self.violations.append((self.tag, "trained model", what))

    def check_source(self, joined: str) -> None:
        box = self.session.widget("src_text") if self.session else None
        if box is None or box.state is None:
            return
        self.sources_checked += 1
        if joined != "".join(box.state.string_value.split()).lower():
            self.problems.append(f"wrong view: source tokens {joined!r}, input box {box.state.string_value!r}")


def figure_texts(spec) -> list[str]:
    """The strings of a Plotly spec worth scanning: every short string, and every list of tokens (tick labels)
    joined and reversed. Binary arrays ({"bdata": ...}) are skipped: base64 may spell anything."""
    out: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            if "bdata" not in node:
                for value in node.values():
                    walk(value)
        elif isinstance(node, list):
            if node and all(isinstance(v, str) for v in node):
                tokens = [html.unescape(v) for v in node if not special(html.unescape(v))]
                if all(len(t) <= 3 for t in tokens):
                    joined = "".join(tokens)
                    out.append(joined)
                    return
            for value in node:
                walk(value)
        elif isinstance(node, str) and len(node) <= 300:
            out.append(node)

    walk(spec)
    return out


# --- the class --------------------------------------------------------------------------------------------------
@dataclass
class Run:
    """What one configuration measured."""

    latencies: dict = field(default_factory=lambda: defaultdict(list))  # action -> [s] (non-trainers)
    trainer_latencies: list = field(default_factory=list)
    attempts: int = 0  # the non-trainers' interactions, failed ones included
    failures: Counter = field(default_factory=Counter)
    failure_examples: list = field(default_factory=list)
    checkers: list = field(default_factory=list)
    training_runs: list = field(default_factory=list)  # (steps, seconds, finished, wall seconds)
    cookies: dict = field(default_factory=dict)  # student index -> replica cookie


class Classroom:
    def __init__(self, url: str, args, run: Run, trainers: int) -> None:
        self.url, self.args, self.run, self.trainers = url, args, run, trainers
        self.deadline = 0.0
        self.typed: dict[str, set[str]] = defaultdict(set)  # tag -> texts typed (what the checks look for)

    async def session(self, index: int, checker: Checker | None, path: str) -> Session:
        cookie = await asyncio.to_thread(get_page, f"{self.url}/{path}")
        if cookie:
            self.run.cookies[index] = cookie.split("=", 1)[1]
        session = Session(self.url, cookie=cookie, on_element=checker, timeout=self.args.timeout)
        if checker is not None:
            checker.session = session
        await session.connect()
        return session

    def failed(self, index: int, action: str, what: str) -> None:
        self.run.failures[action] += 1
        if len(self.run.failure_examples) < 12:
            self.run.failure_examples.append(f"student {index} {action}: {what}")

    async def act(self, index: int, checker: Checker, action: str, call, record: list) -> bool:
        """One interaction; False when the session is lost (the student reloads the page)."""
        checker.problems.clear()
        if record is not self.run.trainer_latencies:
            self.run.attempts += 1
        try:
            result = await call
        except RunFailed as error:
            self.failed(index, action, str(error))
            return False
        except (KeyError, OSError) as error:
            self.failed(index, action, f"{type(error).__name__}: {error}")
            return False
        if checker.problems:
            self.failed(index, action, "; ".join(checker.problems[:2]))
        record.append(result.latency)
        return True

    async def think(self, rng: random.Random) -> bool:
        """A pause before the next action; False once the window is over."""
        pause = rng.uniform(*self.args.think)
        if time.monotonic() + pause >= self.deadline:
            await asyncio.sleep(max(0.0, self.deadline - time.monotonic()))
            return False
        await asyncio.sleep(pause)
        return True

    async def student(self, index: int, rng: random.Random) -> None:
        checker = Checker(tag_of(index), trainer=False, typed=self.typed)
        self.run.checkers.append(checker)
        texts = (f"{checker.tag}{WORDS[(index + k) % len(WORDS)]}"[:12] for k in itertools.count())
        pages = self.args.pages
        count, k = 0, index % len(pages)
        session = await self.session(index, checker, pages[k])
        ok = await self.act(index, checker, "open", session.open(pages[k]), self.run.latencies["open"])
        while count < self.args.max_interactions:
            if not ok:  # lost: reload the page, as a browser would (same URL, so the same view)
                await session.close()
                query, path = session.query, session.page_path
                session = await self.session(index, checker, path)
                session.query = query
                ok = await self.act(index, checker, "open", session.open(path), self.run.latencies["open"])
                continue
            k += 1
            page = pages[k % len(pages)]
            plan = [("page", page), *([("input", next(texts))] if page != "training" else []),
                    ("layer", None), ("head", None), ("kind", None)]
            for action, value in plan:
                if not await self.think(rng):
                    await session.close()
                    return
                if action == "page":
                    call = session.switch_page(value)
                elif action == "input":
                    self.typed[checker.tag].add(value)  # known to every check before anyone could see it
                    call = session.set_value("src_text", value)
                elif session.widget(action) is not None:
                    call = self.change(session, action, rng)
                else:  # not on this page
                    continue
                ok = await self.act(index, checker, action, call, self.run.latencies[action])
                count += 1
                if not ok:
                    break
        await session.close()

    @staticmethod
    def change(session: Session, key: str, rng: random.Random):
        widget = session.widget(key)
        current = widget.state.string_value if widget.state is not None else None
        return session.set_value(key, rng.choice([o for o in widget.options if o != current] or widget.options))

    async def trainer(self, index: int, rng: random.Random) -> None:
        checker = Checker(tag_of(index), trainer=True, typed=self.typed)
        self.run.checkers.append(checker)
        session = await self.session(index, checker, "training")
        if not await self.act(index, checker, "open", session.open("training"), self.run.trainer_latencies):
            await session.close()
            return
        while await self.think(rng):
            session.progress.clear()
            started = time.monotonic()
            task = asyncio.create_task(session.click("training_start", timeout=self.args.train_timeout))
            ended, _ = await asyncio.wait([task], timeout=max(0.0, self.deadline - time.monotonic()))
            if not ended:  # the window is over: stop the training, as Streamlit's Stop does
                await session.stop_script()
                ended, _ = await asyncio.wait([task], timeout=self.args.timeout)
                if not ended:
                    task.cancel()
                    self.failed(index, "train", f"still training {self.args.timeout:.0f} s after stop_script")
                    break
            try:
                task.result()
            except RunFailed as error:
                self.failed(index, "train", str(error))
                break
            steps = [(t, int(m[1]), int(m[2])) for t, text in session.progress if (m := STEP.search(text))]
            if steps:
                self.run.training_runs.append((steps[-1][1] - steps[0][1], steps[-1][0] - steps[0][0],
                                               steps[-1][1] == steps[-1][2], time.monotonic() - started))
        if self.run.training_runs:  # after the window: the trainer's own model must show on its pages
            with contextlib.suppress(RunFailed):
                await session.switch_page("attention")
        await session.close()

    async def warm_up(self, url: str) -> None:
        """One visit of every page (and a typed input) of one replica, straight, before the window: a server that
        was up before class."""
        checker = Checker(WARM_UP_TEXT[:4], trainer=False, typed=self.typed)
        self.typed[checker.tag].add(WARM_UP_TEXT)
        session = Session(url, on_element=checker, timeout=self.args.timeout)
        checker.session = session
        await session.connect()
        await session.open("attention")
        await session.set_value("src_text", WARM_UP_TEXT)
        for page in self.args.pages:
            await session.switch_page(page)
        await session.close()

    async def lesson(self, students: int) -> None:
        rng = random.Random(self.args.seed)
        self.deadline = time.monotonic() + self.args.duration

        async def join(index: int) -> None:
            await asyncio.sleep(rng.uniform(0, min(self.args.think[1], self.args.duration / 4)))  # they arrive
            try:
                if index < self.trainers:
                    await self.trainer(index, random.Random(rng.random()))
                else:
                    await self.student(index, random.Random(rng.random()))
            except (OSError, RunFailed) as error:
                self.failed(index, "connect", f"{type(error).__name__}: {error}")

        await asyncio.gather(*(join(i) for i in range(students)))


# --- one configuration, the table ----------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else float("nan")


def measure(args, replicas: int, proxy: bool, students: int, trainers: int, training_in: str) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="tviz_class_", dir=args.log_dir))
    run = Run()
    environment = {"TVIZ_TRAINING_PROCESSES": "1" if training_in == "processes" else "0"}
    with Servers(replicas, proxy, args.app, workdir, env=environment) as servers:
        classroom = Classroom(servers.url, args, run, trainers)
        for port in servers.ports:
            asyncio.run(classroom.warm_up(f"http://127.0.0.1:{port}"))
        offset = servers.access_log.stat().st_size if proxy else 0
        peak = [0.0]
        replica0 = [cpu_seconds([pid]) for pid in servers.app_pids]
        nginx0 = cpu_seconds([servers.nginx.pid]) if proxy else 0.0
        bench0, busy0, start = time.process_time(), machine_busy_seconds(), time.monotonic()

        async def sample() -> None:
            while True:
                peak[0] = max(peak[0], rss_mib(servers.app_pids))
                await asyncio.sleep(1)

        async def window() -> None:
            sampler = asyncio.create_task(sample())
            try:
                await classroom.lesson(students)
            finally:
                sampler.cancel()

        asyncio.run(window())
        wall = time.monotonic() - start
        per_replica = [cpu_seconds([pid]) - before for pid, before in zip(servers.app_pids, replica0, strict=True)]
        cpu = sum(per_replica)
        nginx_cpu = cpu_seconds([servers.nginx.pid]) - nginx0 if proxy else 0.0
        bench_cpu = time.process_time() - bench0
        other_load = (machine_busy_seconds() - busy0 - cpu - nginx_cpu - bench_cpu) / wall
        routes = servers.routes(offset) if proxy else {}
    spread, unsticky = Counter(), 0
    for route in run.cookies.values():
        upstreams = routes.get(route, set())
        unsticky += len(upstreams) > 1
        spread[next(iter(upstreams), "?")] += 1
    latencies = [x for values in run.latencies.values() for x in values]
    interactions = run.attempts
    runs = run.training_runs
    return {
        "topology": f"{replicas} × app" + (" + nginx" if proxy else "")
                    + (f", training in {training_in}" if trainers else ""), "N": students, "trainers": trainers,
        "interactions": interactions, "failures": sum(run.failures.values()),
        "p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95), "max": max(latencies, default=0),
        "violations": sum(len(c.violations) for c in run.checkers),
        "rss": peak[0], "cpu": cpu, "cpu_per": 1000 * cpu / max(1, interactions),
        "steps_per_run": sum(s / t for s, t, *_ in runs if t > 0) / len(runs) if runs else None,
        "steps_total": sum(s for s, *_ in runs) / wall if runs else None,
        "trainings": f"{sum(r[2] for r in runs)} done, {len(runs) - sum(r[2] for r in runs)} stopped, "
                     f"{sum(c.busy for c in run.checkers)} refused (busy)" if trainers else "",
        "by_action": {a: (len(v), percentile(v, 0.5), percentile(v, 0.95)) for a, v in run.latencies.items() if v},
        "failure_examples": run.failure_examples,
        "violation_examples": [v for c in run.checkers for v in c.violations][:8],
        "controls": (sum(c.sources_checked for c in run.checkers),
                     sum(c.trained_seen for c in run.checkers if c.trainer)),
        "bench_cpu": bench_cpu, "nginx_cpu": nginx_cpu, "other_load": other_load, "wall": wall,
        "per_replica_cpu": per_replica,
        "spread": dict(spread), "unsticky": unsticky, "logs": str(workdir),
    }


COLUMNS = ("topology", "N", "trainers", "interactions", "failures", "p50 (s)", "p95 (s)", "max (s)",
           "cross-session violations", "server RSS (MiB)", "server CPU (s)", "CPU per interaction (ms)",
           "training steps/s (per run · all)", "other load (cores)")


def row(r: dict) -> str:
    def seconds(x: float) -> str:
        return "–" if math.isnan(x) or not r["interactions"] else f"{x:.2f}"

    steps = "–" if r["steps_per_run"] is None else f"{r['steps_per_run']:.1f} · {r['steps_total']:.1f}"
    per = "–" if not r["interactions"] else f"{r['cpu_per']:.0f}" if not r["trainers"] else f"({r['cpu_per']:.0f})"
    cells = (r["topology"], r["N"], r["trainers"], r["interactions"], r["failures"], seconds(r["p50"]),
             seconds(r["p95"]), seconds(r["max"]), r["violations"], f"{r['rss']:.0f}", f"{r['cpu']:.1f}", per, steps,
             f"{r['other_load']:.2f}")
    return "| " + " | ".join(map(str, cells)) + " |"


def details(r: dict) -> str:
    actions = ", ".join(f"{a} {n}× p50 {p50:.2f} p95 {p95:.2f}" for a, (n, p50, p95) in r["by_action"].items())
    lines = [f"- {r['topology']}, N={r['N']}, trainers={r['trainers']} ({r['wall']:.0f} s): {actions}",
             f"  bench process CPU {r['bench_cpu']:.1f} s; checks: {r['controls'][0]} source rows compared, "
             f"{r['controls'][1]} trained views seen by trainers" + (f"; trainings: {r['trainings']}"
                                                                    if r["trainings"] else "")]
    if r["spread"]:
        lines.append(f"  students per replica {r['spread']}, routes on more than one replica: {r['unsticky']}; "
                     f"CPU per replica {[round(c, 1) for c in r['per_replica_cpu']]} s, "
                     f"nginx CPU {r['nginx_cpu']:.1f} s")
    lines += [f"  failure: {f}" for f in r["failure_examples"][:4]]
    lines += [f"  VIOLATION: {v}" for v in r["violation_examples"][:4]]
    return "\n".join(lines)


def interrupt(*_args) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, nargs="+", default=[1, 10, 20, 40])
    parser.add_argument("--trainers", type=int, nargs="+", default=[0, 1, 5])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1],
                        help="app processes; several values run each configuration on each, one after the other")
    parser.add_argument("--training-in", nargs="+", choices=["processes", "threads"], default=["processes"],
                        help="where the server runs trainings (TVIZ_TRAINING_PROCESSES); several: paired runs")
    parser.add_argument("--proxy", choices=["none", "nginx"], default=None,
                        help="default: nginx with more than one replica, none with one")
    parser.add_argument("--think", type=float, nargs=2, default=[2.0, 8.0], metavar=("MIN", "MAX"),
                        help="seconds between two actions of a student (uniform)")
    parser.add_argument("--duration", type=float, default=60, help="seconds of class per configuration")
    parser.add_argument("--max-interactions", type=int, default=1000, help="per student")
    parser.add_argument("--timeout", type=float, default=60, help="seconds for one interaction")
    parser.add_argument("--train-timeout", type=float, default=600, help="seconds for one training run")
    parser.add_argument("--pages", nargs="+", default=list(PAGES), help='URL paths ("" is the lesson)')
    parser.add_argument("--app", default="app.py")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-dir", default=None, help="where the servers' logs go (default: a temp dir)")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, interrupt)  # stop the servers on the way out, as on Ctrl-C
    if args.proxy == "none" and max(args.replicas) > 1:
        parser.error("more than one replica needs --proxy nginx")
    print(f"# bench_class: think {args.think[0]:g}–{args.think[1]:g} s, {args.duration:g} s per configuration, "
          f"pages {' '.join(p or '/' for p in args.pages)}, {os.cpu_count()} cores", flush=True)
    results = []
    for students, trainers, replicas, training_in in itertools.product(args.students, args.trainers, args.replicas,
                                                                       args.training_in):
        if trainers > students or (not trainers and training_in != args.training_in[0]):
            continue
        proxy = (args.proxy or ("nginx" if replicas > 1 else "none")) == "nginx"
        result = measure(args, replicas, proxy, students, trainers, training_in)
        results.append(result)
        print(row(result), flush=True)
        print(details(result), flush=True)
    print("\n| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS))
    print("\n".join(row(r) for r in results))
    print("\n" + "\n".join(details(r) for r in results))
    print(f"\nbench process: max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
