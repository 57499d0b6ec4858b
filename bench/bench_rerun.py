"""CPU per rerun of the real app, by kind of interaction: `python bench/bench_rerun.py [--rounds 3] [--profile]`.

Measured on the 2-core development machine, ms of CPU per interaction, mean of 3 rounds of 30 interactions
(--students 40: 1,200). Before: the code of commit f71d4fd (this bench's first); after: this one.

| interaction | server process | server script threads | AppTest script | 40 students (AppTest) |
|---|---:|---:|---:|---:|
| cache hit (same view, or a drawing whose figures are cached) | 118 → **26** | 105 → 17 | 102 → 17 | 161 → 22 |
| changed layer / head | 172 → **65** | 153 → 52 | 146 → 53 | 180 → 59 |
| changed kind (Attention's "Draw", Embeddings' side too) | 190 → **68** | 172 → 51 | 149 → 52 | 195 → 60 |
| changed input (misses every cache) | 226 → **86** | 204 → 69 | 196 → 67 | 202 → 75 |
| page switch (Lesson steps too) | 139 → **54** | 125 → 40 | 117 → 39 | 127 → 39 |
| **every interaction** | **163 → 57** | 146 → 43 | 137 → 43 | 168 → 48 |

Later (issue 23), with figures assembled once (figures/common.py `assembled_figure`) and Inside one head building
only the steps it draws, `--server`, same day, back to back: every interaction 106 → 74 ms; cache hit 54 → 52,
layer / head 119 → 74, kind 124 → 77, input 163 → 109, page switch 98 → 70.

Where the ~140 ms of a rerun went (before, sampled in AppTest): building Plotly figures 82 % (validation and,
above all, update_layout / update_xaxes after building: ~4 ms per axis; Inside one head, Decoding, Embeddings
and parts of the Lesson rebuilt every figure on every rerun), Streamlit widgets and elements 6 %, the figures'
to_dict 3 %, st.plotly_chart's element ids and protobuf 2 %, to_json 2 % (orjson), model runs 3 %, sidebar,
catalogs, caches, runner < 1 % each. A real server also ran Streamlit's gc.collect(2) after every rerun (AppTest
never does): a few ms then, 15-30 ms once the shared cache holds many figures (now off). After: building 47 %
(misses only: Inside one head's nine figures are ~90 ms of them), widgets 19 %, app code 12 %, model runs 9 %,
st.plotly_chart 7 %, to_json 4 %. The server process spends ~14 ms per interaction beyond its script threads
(Tornado, the websocket).

Method. Streamlit's AppTest runs `transformer_viz.app.main.main()` (what app.py runs) in this process over
a student's sequence of interactions, ROUNDS times, each round with new source texts so that a changed input
misses every cache (a warm-up round first: imports, the shipped models). Pages Attention, Masks, Inside one
head, Decoding, Embeddings, Lesson; per page: switch to it, type a new source text, change layer / head, change
the kind (Attention's "Draw" too), press the sidebar's "Back to the pretrained model" (a full rerun that
changes nothing here: the cache-hit case). In AppTest "draw: raw scores" changes nothing after the first round:
AppTest keeps the query parameter of a widget set back to its default, which a browser drops.

Two clocks per interaction:
  script  the CPU time of Streamlit's script thread (ScriptRunner._run_script, read with the thread's own
          CPU clock): the script, its widgets and figures, st.plotly_chart's serialization, the post-script GC
          (a real server's; AppTest's runner has none) — what a server spends in its script threads.
  total   this process's CPU (time.process_time) around AppTest.run(): script + AppTest's own overhead
          (parsing the messages into its element tree, a mocked runtime per run).
AppTest reruns the whole script for every widget; in a browser a widget inside an `st.fragment` (the
Attention page's explorer) reruns only that fragment, and the server also serializes every message for
the websocket. `--server` measures the same sequence against a real `streamlit run bench/rerun_app.py` (the
app and a timer of its script threads) driven by Chromium's clicks: the server process's CPU from /proc (all
its threads: the script, Tornado, serializing for the websocket) and its script threads' CPU.
`--students N` runs N AppTest sessions taking turns step by step (the shared caches as a class fills them).
`--dump FILE` writes every chart's specification after every step: two runs' files are equal when a change
draws the same figures (before and after above: all 90 steps equal).

`--profile` also prints where the script thread's time goes, grouped (a sampler reads the script thread's
stack every ~1 ms and weighs each sample by the thread's CPU time since the last; the innermost frame that
names a group decides), and cProfile's top cumulative entries for the same runs.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import logging
import os
import pstats
import random
import statistics
import string
import sys
import tempfile
import threading
import time
import types
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # transformer_viz and devtools, when run as `python bench/bench_rerun.py`

KINDS = ("cache hit", "layer/head", "kind", "input", "page switch")


# --- Per-rerun CPU of the script thread --------------------------------------------------------------------

@dataclass
class ScriptMeter:
    """Patches ScriptRunner._run_script: the script thread's CPU per run, optionally profiled and sampled."""

    runs: list[float] = field(default_factory=list)  # CPU seconds of each run
    profiler: cProfile.Profile | None = None
    sampler: StackSampler | None = None

    def install(self) -> None:
        from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

        original = ScriptRunner._run_script
        meter = self

        def timed(runner, rerun_data):
            if meter.sampler:
                meter.sampler.watch(threading.get_ident())
            if meter.profiler:
                meter.profiler.enable()
            start = time.thread_time()
            try:
                return original(runner, rerun_data)
            finally:
                meter.runs.append(time.thread_time() - start)
                if meter.profiler:
                    meter.profiler.disable()
                if meter.sampler:
                    meter.sampler.watch(None)

        ScriptRunner._run_script = timed


# Groups of the profile: the innermost frame of a sample that matches one of these names its group.
GROUPS = (
    # (group, path fragment, function name or None for any)
    ("serialization: plotly to_json", "plotly/io/_json.py", None),
    ("serialization: figure.to_dict", "plotly/tools.py", "return_figure_from_figure_or_data"),
    ("catalogs / translation", "transformer_viz/i18n/", None),
    ("catalogs / translation", "transformer_viz/app/session/words.py", "tr"),
    ("figure building (Plotly objects, validation)", "transformer_viz/figures/", None),
    ("model runs, walkthrough, analysis (torch)", "transformer_viz/analysis/", None),
    ("model runs, walkthrough, analysis (torch)", "transformer_viz/model/", None),
    ("model runs, walkthrough, analysis (torch)", "transformer_viz/trace/", None),
    ("model runs, walkthrough, analysis (torch)", "transformer_viz/lessons/", None),
    ("model runs, walkthrough, analysis (torch)", "transformer_viz/data/", None),
    ("model runs, walkthrough, analysis (torch)", "transformer_viz/train/", None),
    ("st.plotly_chart: element id, protobuf", "streamlit/elements/plotly_chart.py", "plotly_chart"),
    ("Streamlit caches (hashing arguments)", "streamlit/runtime/caching/", None),
)
STREAMLIT_CALL = "Streamlit widgets / elements"
SIDEBAR_CALL = "sidebar (its widgets and code)"
RUNNER = "Streamlit runner (before / after the script, GC)"
APP = "app code (pages, frame, session, server)"


def classify(frames: list) -> str:
    """The group of one sample: frames from the innermost outwards."""
    for i, frame in enumerate(frames):
        path, name = frame.f_code.co_filename.replace("\\", "/"), frame.f_code.co_name
        for group, fragment, function in GROUPS:
            if fragment in path and (function is None or function == name):
                return group
        caller = frames[i + 1].f_code.co_filename if i + 1 < len(frames) else ""
        if "/streamlit/" in path and "/transformer_viz/app/" in caller:
            return SIDEBAR_CALL if caller.endswith("frame/sidebar.py") else STREAMLIT_CALL
        if path.endswith("transformer_viz/app/frame/sidebar.py"):
            return SIDEBAR_CALL
        if "/transformer_viz/app/" in path:
            return APP
    return RUNNER


class StackSampler:
    """Samples the watched thread's Python stack; each sample weighs the thread's CPU time since the last."""

    def __init__(self, interval: float = 0.001):
        self.interval = interval
        self.cpu = defaultdict(float)  # group -> CPU seconds
        self._thread_id: int | None = None
        self._clock: int | None = None
        self._last = 0.0
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._loop, daemon=True)

    def watch(self, thread_id: int | None) -> None:
        if thread_id is not None:
            self._clock = time.pthread_getcpuclockid(thread_id)
            self._last = time.clock_gettime(self._clock)
        else:  # the end of a run: the time since the last sample is left out (its stack would be this call's)
            self._clock = None
        self._thread_id = thread_id

    def _sample(self) -> None:
        thread_id, clock = self._thread_id, self._clock
        if thread_id is None or clock is None:
            return
        frame = sys._current_frames().get(thread_id)
        try:
            now = time.clock_gettime(clock)
        except OSError:  # the thread ended
            return
        frames = []
        while isinstance(frame, types.FrameType):
            frames.append(frame)
            frame = frame.f_back
        self.cpu[classify(frames)] += now - self._last
        self._last = now

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval)

    def __enter__(self):
        self._previous_switch = sys.getswitchinterval()
        sys.setswitchinterval(self.interval / 2)  # the sampler gets the GIL often enough
        self._sampler.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._sampler.join()
        sys.setswitchinterval(self._previous_switch)


# --- The interactions --------------------------------------------------------------------------------------

def app_script() -> None:
    """What app.py runs (AppTest.from_function writes this function's body to a script file)."""
    from transformer_viz.app.main import main

    main()


@dataclass(frozen=True)
class Step:
    page: str
    kind: str  # one of KINDS
    label: str
    # "page" (switch to the page at URL path `key`), "selectbox", "radio", "segmented" (set `key` to `value`),
    # "input" (a new source text), "reset" (the sidebar's "Back to the pretrained model", which here changes nothing)
    widget: str
    key: str = ""
    value: object = None


# Every step changes what it names. A round starts from the lesson's step 2 (the view's defaults, "hello"); on each
# page a student types a new source text first, so that the layer, head and kind changes after it draw new figures.
SEQUENCE = (
    Step("attention", "page switch", "open Attention", "page", "attention"),
    Step("attention", "input", "new source text", "input"),
    Step("attention", "layer/head", "layer 1", "selectbox", "layer", 0),
    Step("attention", "layer/head", "head 2", "selectbox", "head", 1),
    Step("attention", "kind", "kind: encoder self-attention", "selectbox", "kind", "encoder_self"),
    Step("attention", "kind", "draw: raw scores", "selectbox", "value", "scores"),
    Step("attention", "cache hit", "draw: weights again (cached)", "selectbox", "value", "weights"),
    Step("attention", "cache hit", "same view (sidebar: back to pretrained)", "reset"),
    Step("masks", "page switch", "open Masks", "page", "masks"),
    Step("masks", "input", "new source text", "input"),
    Step("masks", "layer/head", "head 1", "selectbox", "head", 0),
    Step("masks", "kind", "mask kind: encoder self", "selectbox", "mask_kind", "encoder_self"),
    Step("masks", "cache hit", "same view (sidebar: back to pretrained)", "reset"),
    Step("head", "page switch", "open Inside one head", "page", "head"),
    Step("head", "input", "new source text", "input"),
    Step("head", "layer/head", "layer 2", "selectbox", "layer", 1),
    Step("head", "kind", "kind: cross", "selectbox", "kind", "cross"),
    Step("head", "cache hit", "same view (sidebar: back to pretrained)", "reset"),
    Step("decoding", "page switch", "open Decoding", "page", "decoding"),
    Step("decoding", "input", "new source text", "input"),
    Step("decoding", "layer/head", "head 2", "selectbox", "head", 1),
    Step("decoding", "cache hit", "same view (sidebar: back to pretrained)", "reset"),
    Step("embeddings", "page switch", "open Embeddings", "page", "embeddings"),
    Step("embeddings", "input", "new source text", "input"),
    Step("embeddings", "kind", "side: target", "radio", "side", "tgt"),
    Step("embeddings", "cache hit", "same view (sidebar: back to pretrained)", "reset"),
    Step("lesson", "page switch", "open the Lesson", "page", ""),
    Step("lesson", "page switch", "lesson: step 1 (en-fr)", "segmented", "lesson_step", 1),  # its callback sets
    Step("lesson", "page switch", "lesson: step 2 (hello)", "segmented", "lesson_step", 2),  # the step up
    Step("lesson", "cache hit", "same view (sidebar: back to pretrained)", "reset"),
)

LESSON_STEP_2 = SEQUENCE[-2]


def apptest_do(at, step: Step, texts) -> None:
    """Change the AppTest's widgets as the step says (its next run sends them)."""
    if step.widget == "page":
        at._page_hash = next(h for h, info in at._registered_pages.items() if info.get("url_pathname") == step.key)
    elif step.widget == "selectbox":
        at.selectbox(key=step.key).set_value(step.value)
    elif step.widget == "radio":
        at.radio(key=step.key).set_value(step.value)
    elif step.widget == "segmented":
        at.segmented_control(key=step.key).set_value(step.value)
    elif step.widget == "input":
        at.sidebar.text_input(key="src_text").set_value(next(texts))
    elif step.widget == "reset":
        next(b for b in at.sidebar.button if b.label == reset_label()).click()


def new_session():
    """An AppTest session of the app, the sidebar's shape and variants opened: the "reset" step's button is in it."""
    from streamlit.testing.v1 import AppTest

    from transformer_viz.app.server.state import SHAPE_OPEN

    at = AppTest.from_function(app_script, default_timeout=300)
    at.session_state[SHAPE_OPEN] = True
    return at


def reset_label() -> str:
    from transformer_viz.i18n import text

    return text("side.reset", "en")


def fresh_texts(seed: int):
    """Source texts never seen before by this process (reverse: letters)."""
    rng = random.Random(seed)
    while True:
        yield "".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 9)))


@dataclass
class Measured:
    step: Step
    script_ms: float
    total_ms: float


def run_sequence(at, meter: ScriptMeter, texts, dump=None) -> list[Measured]:
    """Every step of SEQUENCE once; `dump`: a file that gets each step's chart specifications (one JSON line)."""
    measured = []
    for step in SEQUENCE:
        try:
            apptest_do(at, step, texts)
        except KeyError as missing:
            raise RuntimeError(f"{step.page}: {step.label}: no widget {missing} on {[t.value for t in at.title]}, "
                               f"{[e.value for e in at.error]}") from None
        before = len(meter.runs)
        start = time.process_time()
        at.run()
        total = time.process_time() - start
        if at.exception:
            raise RuntimeError(f"{step.page}: {step.label}: {at.exception[0].value}")
        measured.append(Measured(step, 1000 * sum(meter.runs[before:]), 1000 * total))
        if dump:
            specs = {chart.proto.id: json.loads(chart.proto.spec) for chart in at.get("plotly_chart")}
            dump.write(json.dumps({"page": step.page, "step": step.label, "charts": specs}, sort_keys=True) + "\n")
    return measured


def quiet_streamlit() -> None:
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)


def class_bench(students: int, rounds: int) -> None:
    """`students` AppTest sessions in this process taking turns, step by step (each with its own texts): how
    the server-wide caches serve a class, where others' views come between a student's two reruns."""
    quiet_streamlit()
    meter = ScriptMeter()
    meter.install()
    sessions = []
    for student in range(students):
        at = new_session()
        at.run()
        apptest_do(at, LESSON_STEP_2, None)
        at.run()
        sessions.append((at, fresh_texts(100 * student)))
    quiet_streamlit()
    every: list[Measured] = []
    for round_ in range(rounds + 1):  # the first round warms up
        for step in SEQUENCE:
            for at, texts in sessions:
                apptest_do(at, step, texts)
                before = len(meter.runs)
                at.run()
                if at.exception:
                    raise RuntimeError(f"{step.page}: {step.label}: {at.exception[0].value}")
                if round_:
                    every.append(Measured(step, 1000 * sum(meter.runs[before:]), 0.0))
    print(f"\n{students} students taking turns, {rounds} rounds, ms of CPU of the script thread:")
    print("\n| interaction | reruns | script ms (mean) |")
    print("|---|---:|---:|")
    for kind in KINDS:
        ms = [m.script_ms for m in every if m.step.kind == kind]
        print(f"| {kind} | {len(ms)} | {statistics.mean(ms):.0f} |")
    print(f"| **every interaction** | {len(every)} | **{statistics.mean(m.script_ms for m in every):.0f}** |")


def apptest_bench(rounds: int, profile: bool, dump: Path | None = None) -> dict[str, list[Measured]]:
    quiet_streamlit()
    meter = ScriptMeter()
    meter.install()
    at = new_session()
    at.run()  # the first run: imports, the lesson's setup
    apptest_do(at, LESSON_STEP_2, None)
    at.run()
    run_sequence(at, meter, fresh_texts(10_000))  # warm-up: the shipped models, lazy imports, first figures
    quiet_streamlit()
    by_kind: dict[str, list[Measured]] = defaultdict(list)
    every: list[Measured] = []
    with open(dump, "w") if dump else contextlib.nullcontext() as dumped:
        for round_ in range(rounds):
            for m in run_sequence(at, meter, fresh_texts(round_), dumped):
                by_kind[m.step.kind].append(m)
                every.append(m)
    print_steps(every, rounds)
    print_table(by_kind, every)
    if profile:  # more rounds, new texts: first sampled (little overhead), then under cProfile (much)
        with StackSampler() as sampler:
            meter.sampler = sampler
            before = len(meter.runs)
            for round_ in range(rounds):
                run_sequence(at, meter, fresh_texts(1000 + round_))
        meter.sampler = None
        print_groups(sampler, sum(meter.runs[before:]))
        meter.profiler = cProfile.Profile()
        for round_ in range(rounds):
            run_sequence(at, meter, fresh_texts(2000 + round_))
        print_profile(pstats.Stats(meter.profiler))
        meter.profiler = None
    return by_kind


# --- Against a real server ---------------------------------------------------------------------------------

def option_label(step: Step) -> str:
    """What the widget of a step shows for its value (English)."""
    from transformer_viz.i18n import text

    if step.key in ("layer", "head"):
        return str(step.value + 1)
    if step.key in ("kind", "mask_kind"):
        return text(f"kind.{step.value}", "en")
    if step.key == "value":
        return text(f"value.{step.value}", "en")
    if step.key == "side":
        return text("tokens.target" if step.value == "tgt" else "tokens.source", "en")
    return str(step.value)


def browser_do(page, step: Step, texts) -> None:
    """Do the step in Chromium as a student would (the caller waits for the rerun it causes)."""
    from devtools.browser import choose_option
    from transformer_viz.i18n import text

    box = page.locator(f".st-key-{step.key}")
    if step.widget == "page":
        page.get_by_test_id("stSidebarNav").get_by_text(text(f"nav.{step.key or 'lesson'}", "en"), exact=True).click()
    elif step.widget == "selectbox":
        choose_option(page, box, option_label(step))
    elif step.widget == "radio":
        box.get_by_text(option_label(step), exact=True).click()
    elif step.widget == "segmented":
        box.get_by_role("radio", name=str(step.value), exact=True).click()
    elif step.widget == "input":
        field = page.locator(".st-key-src_text input")
        field.fill(next(texts))
        field.press("Enter")
    else:
        button = page.get_by_test_id("stSidebar").get_by_role("button", name=reset_label(), exact=True)
        try:
            button.wait_for(state="visible", timeout=5000)
        except Exception:  # its expander is folded
            page.get_by_test_id("stSidebar").get_by_text(text("side.shape", "en"), exact=True).click()
        button.click()


def wait_for_runs(log: Path, count: int, timeout: float = 60) -> None:
    """Until the server's log holds `count` finished script runs."""
    deadline = time.monotonic() + timeout
    while len(log.read_text().splitlines()) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no script run in {timeout:.0f} s")
        time.sleep(0.02)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and all its threads, ended ones too (10 ms ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(port: str) -> int:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            args = cmdline.read_bytes().split(b"\0")
            if b"rerun_app.py" in b" ".join(args) and port.encode() in args:
                return int(cmdline.parent.name)
    raise RuntimeError(f"no server on port {port}")


def server_bench(rounds: int) -> None:
    """The same sequence in Chromium against `streamlit run bench/rerun_app.py` (the app and a timer)."""
    from devtools.browser import chromium, exceptions, new_page, open_app, streamlit_server, wait_for_idle

    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "runs.txt"
        log.touch()
        env = {"PYTHONPATH": str(ROOT), "TV_RERUN_LOG": str(log)}  # this checkout, not an installed copy
        with streamlit_server("bench/rerun_app.py", env=env) as url, chromium() as browser:
            pid = server_pid(url.rsplit(":", 1)[1])
            page = new_page(browser)
            open_app(page, url)
            runs = len(log.read_text().splitlines())
            browser_do(page, LESSON_STEP_2, None)
            wait_for_runs(log, runs + 1)

            def sequence(texts) -> list[tuple[Step, float, float, int, int]]:
                done = []
                for step in SEQUENCE:
                    runs_before, cpu_before = len(log.read_text().splitlines()), process_cpu(pid)
                    try:
                        browser_do(page, step, texts)
                        wait_for_runs(log, runs_before + 1)  # a short run may never show as running
                        wait_for_idle(page)
                    except Exception as error:
                        raise RuntimeError(f"{step.page}: {step.label}: {error}") from None
                    page.wait_for_timeout(300)  # the server sends the last messages
                    if exceptions(page):
                        raise RuntimeError(f"{step.page}: {step.label}: {exceptions(page)}")
                    runs = [line.split() for line in log.read_text().splitlines()[runs_before:]]
                    done.append((step, 1000 * (process_cpu(pid) - cpu_before),
                                 1000 * sum(float(cpu) for cpu, _ in runs), len(runs),
                                 sum(int(fragment) for _, fragment in runs)))
                return done

            sequence(fresh_texts(10_000))  # warm-up
            measured = [m for round_ in range(rounds) for m in sequence(fresh_texts(round_))]
    print(f"\nReal server (Chromium clicks), mean of {rounds} rounds, ms of CPU: the server process (10 ms ticks) / "
          "its script threads; runs (fragment runs)")
    steps: dict[tuple, list] = defaultdict(list)
    for m in measured:
        steps[(m[0].page, m[0].label, m[0].kind)].append(m)
    for (page_name, label, kind), ms in steps.items():
        print(f"  {page_name:11s} {label:32s} {kind:12s} {statistics.mean(m[1] for m in ms):7.1f} "
              f"{statistics.mean(m[2] for m in ms):7.1f}  {sum(m[3] for m in ms)} ({sum(m[4] for m in ms)})")
    print("\n| interaction | reruns | server process ms (mean) | script threads ms (mean) |")
    print("|---|---:|---:|---:|")
    for kind in KINDS:
        ms = [m for m in measured if m[0].kind == kind]
        print(f"| {kind} | {len(ms)} | {statistics.mean(m[1] for m in ms):.0f} | "
              f"{statistics.mean(m[2] for m in ms):.0f} |")
    print(f"| **every interaction** | {len(measured)} | **{statistics.mean(m[1] for m in measured):.0f}** | "
          f"{statistics.mean(m[2] for m in measured):.0f} |")


# --- Output ------------------------------------------------------------------------------------------------

def print_steps(every: list[Measured], rounds: int) -> None:
    print(f"\nPer step (mean of {rounds} rounds), ms of CPU: script thread / whole process around AppTest.run()")
    steps: dict[tuple, list[Measured]] = defaultdict(list)
    for m in every:
        steps[(m.step.page, m.step.label, m.step.kind)].append(m)
    for (page, label, kind), ms in steps.items():
        print(f"  {page:11s} {label:32s} {kind:12s} {statistics.mean(m.script_ms for m in ms):7.1f} "
              f"{statistics.mean(m.total_ms for m in ms):7.1f}")


def print_table(by_kind: dict[str, list[Measured]], every: list[Measured]) -> None:
    print("\n| interaction | reruns | script ms (mean / max) | AppTest total ms (mean) |")
    print("|---|---:|---:|---:|")
    for kind in KINDS:
        ms = by_kind.get(kind, [])
        if ms:
            print(f"| {kind} | {len(ms)} | {statistics.mean(m.script_ms for m in ms):.0f} / "
                  f"{max(m.script_ms for m in ms):.0f} | {statistics.mean(m.total_ms for m in ms):.0f} |")
    print(f"| **every interaction** | {len(every)} | **{statistics.mean(m.script_ms for m in every):.0f}** / "
          f"{max(m.script_ms for m in every):.0f} | {statistics.mean(m.total_ms for m in every):.0f} |")


def print_groups(sampler: StackSampler, measured: float) -> None:
    total = sum(sampler.cpu.values())
    print(f"\nWhere the script thread's CPU goes (sampled: {1000 * total:.0f} ms of the {1000 * measured:.0f} ms "
          "measured; the rest is each run's end after its last sample):")
    for group, seconds in sorted(sampler.cpu.items(), key=lambda item: -item[1]):
        print(f"  {100 * seconds / total:5.1f} %  {1000 * seconds:8.0f} ms  {group}")


def print_profile(stats: pstats.Stats, top: int = 45) -> None:
    print(f"\ncProfile of the same script runs (with its own overhead), top {top} by cumulative time:")
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="where the time goes (sampled) and cProfile")
    parser.add_argument("--server", action="store_true", help="against `streamlit run` in Chromium, not AppTest")
    parser.add_argument("--students", type=int, default=0, help="this many AppTest sessions taking turns")
    parser.add_argument("--dump", type=Path, help="write every chart's specification of every step to this file "
                        "(to check that a change draws the same figures)")
    args = parser.parse_args()
    if args.server:
        server_bench(args.rounds)
    elif args.students:
        class_bench(args.students, args.rounds)
    else:
        apptest_bench(args.rounds, args.profile, args.dump)


if __name__ == "__main__":
    main()
