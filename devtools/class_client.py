"""One simulated student: Streamlit's own websocket protocol, no browser (bench/bench_class.py, bench_follow.py).

The protocol, as Streamlit's frontend speaks it (checked against the frames a real Chromium sends to this app):

* The browser GETs the page (`/attention`: the app's HTML), then opens a websocket on `/_stcore/stream` with the
  subprotocol `streamlit` (a second entry would be the XSRF token, only needed for auth cookies) and, behind a
  proxy, the cookies of that GET.
* Every message is binary protobuf: the client sends `BackMsg`, the server `ForwardMsg` (`streamlit.proto`).
* A run is asked for with `BackMsg.rerun_script`, a `ClientState`: the URL's `query_string` (without `?`), every
  current widget's value (`widget_states`), and which page: on the first load only `page_name` (the URL path,
  "" for the home page), afterwards the page's `page_script_hash` (from the `navigation` message). A widget inside
  an `st.fragment` reruns only its fragment: the same message with `fragment_id` set (each delta names its
  fragment). `cached_message_hashes` are the messages the browser claims to have cached; we claim none, so the
  server never answers with a `ref_hash` reference (such a reference is counted as an error).
* The server answers with `new_session`, `navigation`, `page_info_changed` (the URL's new query string),
  `delta`s (`delta.new_element` is one element; widgets carry an id `$$ID-<hash>-<key>` that ends with the user
  key, their options, default and, when the script set it, `set_value` + the value) and finally
  `script_finished` (FINISHED_SUCCESSFULLY, or FINISHED_FRAGMENT_RUN_SUCCESSFULLY for a fragment;
  FINISHED_EARLY_FOR_RERUN when `st.rerun()` starts the script again, whose own `script_finished` follows).
* Widget values go as the frontend's WidgetStateManager sends them: the *label* of the chosen option as
  `string_value` for selectbox and radio, `string_array_value` of labels for select_slider, pills and
  multiselect, `double_array_value` for a slider, `bool_value` for checkbox and toggle, `string_value` for text;
  a button press is `trigger_value: true`, sent once. Buttons, download buttons and chart selections have no
  value until used and are not sent. On a page switch the frontend sends only the sidebar's widgets (the main
  area's belong to the old page); a bound widget's change also writes its label into the URL's query string.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect

FINISHED = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}
LOST = -1  # RunSeen.status of a run whose script_finished never came
SIDEBAR = 1  # delta_path[0]: 0 the main area, 1 the sidebar, 2 the event container (page config, st.html style)


class RunFailed(Exception):
    """A run that did not finish: timeout, closed connection, compile error, protocol surprise."""


@dataclass
class Widget:
    id: str
    key: str  # the user key the id ends with ("None" for a widget without one)
    kind: str  # the Element field: selectbox, radio, slider, text_input, ...
    element: object  # the widget's proto (options, default, query_param_key)
    fragment_id: str
    root: int  # delta_path[0]
    state: WidgetState | None  # what the frontend would send (None: nothing until used)

    @property
    def options(self) -> list[str]:
        if self.kind == "button_group":
            return [option.content for option in self.element.options]
        return list(getattr(self.element, "options", ()))


def initial_state(widget_id: str, kind: str, el) -> WidgetState | None:
    """The value the frontend holds for a widget element just received: the one the script set, else its default
    (None for widgets that send nothing until used)."""
    state = WidgetState(id=widget_id)
    if kind in ("text_input", "text_area"):
        state.string_value = el.value if el.set_value else el.default
    elif kind in ("selectbox", "radio"):
        if el.set_value:
            state.string_value = el.raw_value
        elif el.HasField("default") and 0 <= el.default < len(el.options):
            state.string_value = el.options[el.default]
        else:
            return None
    elif kind == "checkbox":
        state.bool_value = el.value if el.set_value else el.default
    elif kind == "slider" and el.options:  # a select_slider: labels
        labels = list(el.raw_value) if el.set_value else [el.options[int(i)] for i in el.default]
        state.string_array_value.data.extend(labels)
    elif kind == "slider":
        state.double_array_value.data.extend(el.value if el.set_value else el.default)
    elif kind in ("button_group", "multiselect"):
        if el.set_value:
            state.string_array_value.data.extend(el.raw_values)
        else:
            options = [o.content for o in el.options] if kind == "button_group" else list(el.options)
            state.string_array_value.data.extend(options[int(i)] for i in el.default)
    elif kind == "number_input":
        state.double_value = el.value if el.set_value else el.default
    else:  # buttons, download buttons, charts, ...: nothing until used
        return None
    return state


@dataclass
class RunResult:
    latency: float  # s, from sending the BackMsg to its script_finished
    elements: int
    fragment: bool
    reruns: int  # FINISHED_EARLY_FOR_RERUN seen on the way (st.rerun)


@dataclass
class Session:
    """One browser tab's session. `on_element(element, fragment_id, delta_path)` sees every element received."""

    base_url: str  # http://127.0.0.1:PORT
    cookie: str | None = None
    on_element: object = None
    headers: dict[str, str] = field(default_factory=dict)  # more headers of the websocket's handshake
    timeout: float = 60.0
    ws: object = None
    pages: dict[str, str] = field(default_factory=dict)  # url_pathname ("" for home) -> page_script_hash
    page_hash: str = ""
    page_path: str = ""
    widgets: dict[str, Widget] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    session_id: str = ""
    progress: list = field(default_factory=list)  # (time, text) of progress bars received (training)

    async def connect(self) -> None:
        ws_url = self.base_url.replace("http://", "ws://", 1) + "/_stcore/stream"
        headers = {**({"Cookie": self.cookie} if self.cookie else {}), **self.headers}
        # proxy=None: loopback only, whatever the environment says; no pings (a browser sends none).
        try:
            self.ws = await connect(ws_url, subprotocols=["streamlit"], additional_headers=headers,
                                    origin=self.base_url, proxy=None, max_size=None, ping_interval=None,
                                    open_timeout=self.timeout)
        except Exception as error:  # refused, handshake rejected, timeout
            raise RunFailed(f"websocket connect: {type(error).__name__}: {error}") from error

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None

    def widget(self, key: str) -> Widget | None:
        for widget in self.widgets.values():
            if widget.key == key:
                return widget
        return None

    # --- requests -------------------------------------------------------------------------------------------
    async def open(self, path: str) -> RunResult:
        """The first run of a freshly loaded URL /path: the page by its URL path, no widget values."""
        self.page_path = path
        return await self._run(self._client_state(page_name=path, widgets=False))

    async def switch_page(self, path: str) -> RunResult:
        """A click in the page menu: the page by its script hash, the sidebar's widgets only."""
        self.widgets = {i: w for i, w in self.widgets.items() if w.root == SIDEBAR}
        self.page_path, self.page_hash = path, self.pages[path]
        return await self._run(self._client_state())

    async def set_value(self, key: str, value) -> RunResult:
        """Change a widget: a label for selectbox / radio, a string for text, a number for number_input or a slider,
        a list of labels for pills and multiselect, a bool for checkbox, toggle and a keyed expander (open).
        Reruns its fragment if it is in one."""
        widget = self.widget(key)
        if widget is None:
            raise KeyError(key)
        state = WidgetState(id=widget.id)
        if isinstance(value, str):
            state.string_value = value
        elif isinstance(value, bool):
            state.bool_value = value
        elif isinstance(value, list):
            state.string_array_value.data.extend(value)
        elif widget.kind == "number_input":
            state.double_value = float(value)
        else:
            state.double_array_value.data.extend([float(value)])
        widget.state = state
        param = getattr(widget.element, "query_param_key", "")
        if param and isinstance(value, str):
            self.query[param] = value
        return await self._run(self._client_state(fragment_id=widget.fragment_id))

    async def click(self, key: str, timeout: float | None = None) -> RunResult:
        """Press a button (a trigger value, sent with this one run only)."""
        widget = self.widget(key)
        if widget is None:
            raise KeyError(key)
        message = self._client_state(fragment_id=widget.fragment_id)
        message.rerun_script.widget_states.widgets.append(WidgetState(id=widget.id, trigger_value=True))
        return await self._run(message, timeout)

    async def stop_script(self) -> None:
        """The Stop button of Streamlit's toolbar: ends the running script at its next Streamlit call."""
        await self._send(BackMsg(stop_script=True))

    def _client_state(self, page_name: str | None = None, widgets: bool = True, fragment_id: str = "") -> BackMsg:
        message = BackMsg()
        state = message.rerun_script
        state.query_string = urlencode(self.query)
        if page_name is not None:
            state.page_name = page_name
        else:
            state.page_script_hash = self.page_hash
        if fragment_id:
            state.fragment_id = fragment_id
        if widgets:
            state.widget_states.widgets.extend(w.state for w in self.widgets.values() if w.state is not None)
        else:
            state.widget_states.SetInParent()
        state.context_info.url = f"{self.base_url}/{self.page_path}"
        state.context_info.locale = "en-US"
        state.context_info.timezone = "UTC"
        return message

    # --- answers --------------------------------------------------------------------------------------------
    async def _run(self, message: BackMsg, timeout: float | None = None) -> RunResult:
        fragment = bool(message.rerun_script.fragment_id)
        sent = time.monotonic()
        await self._send(message)
        try:
            return await asyncio.wait_for(self._read_run(sent, fragment), timeout or self.timeout)
        except TimeoutError as error:
            raise RunFailed(f"no script_finished in {timeout or self.timeout:.0f} s") from error

    async def _send(self, message: BackMsg) -> None:
        try:
            await self.ws.send(message.SerializeToString())
        except Exception as error:  # the connection is closed
            raise RunFailed(f"websocket send: {type(error).__name__}: {error}") from error

    async def _read_run(self, sent: float, fragment: bool) -> RunResult:
        seen: set[str] = set()
        elements = reruns = 0
        while True:
            try:
                data = await self.ws.recv()
            except Exception as error:  # closed by the server, or the network
                raise RunFailed(f"websocket: {type(error).__name__}: {error}") from error
            msg = ForwardMsg()
            msg.ParseFromString(data)
            kind = msg.WhichOneof("type")
            if kind == "delta":
                elements += self._delta(msg, seen)
            elif kind == "script_finished":
                status = msg.script_finished
                if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    reruns += 1
                    continue
                if status not in FINISHED:
                    raise RunFailed(f"script_finished {ForwardMsg.ScriptFinishedStatus.Name(status)}")
                if status == ForwardMsg.FINISHED_SUCCESSFULLY:  # the frontend forgets widgets not drawn again
                    self.widgets = {i: w for i, w in self.widgets.items() if i in seen}
                return RunResult(time.monotonic() - sent, elements, fragment, reruns)
            elif kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
                self.page_hash = msg.navigation.page_script_hash
            elif kind == "new_session":
                self.page_hash = msg.new_session.page_script_hash or self.page_hash
                self.session_id = msg.new_session.initialize.session_id or self.session_id
            elif kind == "page_info_changed":
                self.query = dict(parse_qsl(msg.page_info_changed.query_string, keep_blank_values=True))
            elif kind == "ref_hash":
                raise RunFailed("the server referred to a cached message that was never claimed")

    def _delta(self, msg: ForwardMsg, seen: set[str]) -> int:
        delta = msg.delta
        if delta.WhichOneof("type") == "add_block":
            self._block(msg, seen)
            return 0
        if delta.WhichOneof("type") != "new_element":
            return 0
        element = delta.new_element
        kind = element.WhichOneof("type")
        el = getattr(element, kind)
        path = tuple(msg.metadata.delta_path)
        if kind == "progress":
            self.progress.append((time.monotonic(), el.text))
        widget_id = getattr(el, "id", "") if kind not in ("plotly_chart", "dataframe", "vega_lite_chart") else ""
        if widget_id.startswith("$$ID-"):
            seen.add(widget_id)
            known = self.widgets.get(widget_id)
            state = known.state if known is not None and not getattr(el, "set_value", False) else \
                initial_state(widget_id, kind, el)
            self.widgets[widget_id] = Widget(widget_id, widget_id.split("-", 2)[2], kind, el, delta.fragment_id,
                                             path[0], state)
        if self.on_element is not None:
            self.on_element(kind, el, delta.fragment_id, path)
        return 1

    def _block(self, msg: ForwardMsg, seen: set[str]) -> None:
        """A keyed expander (`st.expander(key=...)`, Streamlit >= 1.5x) is a widget whose value is whether it is
        open: the frontend sets it from the block's `expanded` as it draws it (not from the user) and sends it with
        every rerun; opening it sends True and reruns."""
        block = msg.delta.add_block
        if block.WhichOneof("type") != "expandable" or not block.expandable.id.startswith("$$ID-"):
            return
        widget_id = block.expandable.id
        seen.add(widget_id)
        state = WidgetState(id=widget_id, bool_value=block.expandable.expanded)
        self.widgets[widget_id] = Widget(widget_id, widget_id.split("-", 2)[2], "expander", block.expandable,
                                         msg.delta.fragment_id, msg.metadata.delta_path[0], state)


# --- a session as the frontend keeps it between requests (bench/bench_follow.py) ---------------------------------
@dataclass
class RunSeen:
    """One run as the frontend saw it, from its new_session to its script_finished (monotonic times)."""

    run_id: str
    fragment_ids: tuple[str, ...]  # () for a full run
    started: float
    finished: float = 0.0
    status: int = 0
    exceptions: list = field(default_factory=list)  # the exception elements it drew
    lost: bool = False  # its script_finished never came: the next run started (`finished` is that time)

    @property
    def full(self) -> bool:
        return not self.fragment_ids


@dataclass
class Waiter:
    """A request of a LiveSession waiting for the run that serves it."""

    fragment_id: str  # "" for a full run
    sent: float
    done: asyncio.Future
    early: RunSeen | None = None  # a run that served it and finished early: the last one, unless the next serves

    def served_by(self, run: RunSeen) -> bool:
        return run.started >= self.sent and (run.full or self.fragment_id in run.fragment_ids)

    def resolve(self, run: RunSeen) -> None:
        if not self.done.done():
            self.done.set_result(run)

    def fail(self, error: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(error)


@dataclass
class LiveSession(Session):
    """A session read by one task all the time, as the frontend reads its websocket, with its auto-rerun timers.

    A fragment with `run_every` makes the server send `auto_rerun` {interval, fragment_id} in every run that draws
    it. The frontend (App.handleAutoRerun, Streamlit 1.67's bundle) keeps one `setInterval` per fragment id and
    leaves it alone while the interval stays the same, so the timer ticks on a fixed clock whether or not the last
    rerun has finished (the server folds reruns that pile up into one); a full run's `new_session` (no fragment
    ids in its run identity), a page switch and `stop_auto_rerun` clear the timers. A tick sends `rerun_script`
    with every widget's value, the fragment's id and `is_auto_rerun`.
    Requests (`open`, `set_value`, `click`, `switch_page`) return when the last run that serves them (a full run,
    or a fragment run of their fragment, started after the request) has finished. Its status may say
    FINISHED_EARLY_FOR_RERUN without an st.rerun: a run's script_finished still in the server's queue when the
    next run starts is rewritten so (ForwardMsgQueue.clear, `_update_script_finished_message`; a full run's
    FINISHED_SUCCESSFULLY only when a full run follows). So a run that finished early serves a request unless the
    next run serves it too (st.rerun's continuation). `on_run(run)` sees every run when it has finished.
    """

    on_run: object = None
    runs: list[RunSeen] = field(default_factory=list)
    ticks: list = field(default_factory=list)  # (monotonic time, fragment id) of every auto rerun sent
    failure: str = ""  # why the reader stopped, if it did
    _timers: dict = field(default_factory=dict)  # fragment id -> (interval, task)
    _waiters: list = field(default_factory=list)  # Waiter
    _reader: object = None
    _current: RunSeen | None = None
    _seen: set = field(default_factory=set)
    _elements: int = 0

    async def connect(self) -> None:
        await super().connect()
        self._reader = asyncio.create_task(self._read_forever())

    async def close(self) -> None:
        self.stop_timers()
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        await super().close()

    async def switch_page(self, path: str) -> RunResult:
        self.stop_timers()  # the frontend's onPageChange
        return await super().switch_page(path)

    def stop_timers(self, fragment_ids=None) -> None:
        for fragment_id in list(self._timers if fragment_ids is None else fragment_ids):
            found = self._timers.pop(fragment_id, None)
            if found is not None:
                found[1].cancel()

    async def _run(self, message: BackMsg, timeout: float | None = None) -> RunResult:
        fragment_id = message.rerun_script.fragment_id
        first, elements = len(self.runs), self._elements
        waiter = Waiter(fragment_id, time.monotonic(), asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        await self._send(message)
        try:
            run = await asyncio.wait_for(waiter.done, timeout or self.timeout)
        except TimeoutError as error:
            raise RunFailed(f"no script_finished in {timeout or self.timeout:.0f} s") from error
        finally:
            self._waiters.remove(waiter)
        reruns = sum(r.status == ForwardMsg.FINISHED_EARLY_FOR_RERUN for r in self.runs[first:])
        return RunResult(run.finished - waiter.sent, self._elements - elements, bool(fragment_id), reruns)

    async def _tick(self, fragment_id: str, interval: float) -> None:
        """setInterval(() => sendUpdateWidgetsMessage(fragment_id, true), interval): ticks that fall due while this
        process is busy are not made up for."""
        loop = asyncio.get_running_loop()
        due = loop.time() + interval
        while True:
            await asyncio.sleep(max(0.0, due - loop.time()))
            message = self._client_state(fragment_id=fragment_id)
            message.rerun_script.is_auto_rerun = True
            self.ticks.append((time.monotonic(), fragment_id))
            await self._send(message)
            due += interval
            while due <= loop.time():
                due += interval

    async def _read_forever(self) -> None:
        try:
            while True:
                msg = ForwardMsg()
                msg.ParseFromString(await self.ws.recv())
                self._receive(msg)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # closed by the server, the network, a protocol surprise
            self.failure = f"{type(error).__name__}: {error}"
            self.stop_timers()
            for waiter in self._waiters:
                waiter.fail(RunFailed(f"websocket: {self.failure}"))

    def _receive(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            if self._current is not None:
                self._end_run(self._current, lost=True)
            run = msg.metadata.run
            self._current = RunSeen(run.script_run_id, tuple(run.fragment_ids), time.monotonic())
            if self._current.full:  # handleNewSession: cleanupAutoReruns
                self.stop_timers()
                self._seen = set()
            for waiter in self._waiters:  # a run that finished early is the last one unless this one serves too
                if waiter.early is not None and not waiter.served_by(self._current):
                    waiter.resolve(waiter.early)
                waiter.early = None
            self.page_hash = msg.new_session.page_script_hash or self.page_hash
            self.session_id = msg.new_session.initialize.session_id or self.session_id
        elif kind == "delta":
            self._elements += self._delta(msg, self._seen)
            element = msg.delta.new_element if msg.delta.WhichOneof("type") == "new_element" else None
            if element is not None and element.WhichOneof("type") == "exception" and self._current is not None:
                self._current.exceptions.append(f"{element.exception.type}: {element.exception.message[:160]}")
        elif kind == "auto_rerun":
            fragment_id, interval = msg.auto_rerun.fragment_id, msg.auto_rerun.interval
            if fragment_id and self._timers.get(fragment_id, (None,))[0] != interval:
                self.stop_timers([fragment_id])
                self._timers[fragment_id] = interval, asyncio.create_task(self._tick(fragment_id, interval))
        elif kind == "stop_auto_rerun":
            self.stop_timers(msg.stop_auto_rerun.fragment_ids)
        elif kind == "navigation":
            self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            self.page_hash = msg.navigation.page_script_hash
            self.page_path = next((path for path, h in self.pages.items() if h == self.page_hash), self.page_path)
        elif kind == "page_info_changed":
            self.query = dict(parse_qsl(msg.page_info_changed.query_string, keep_blank_values=True))
        elif kind == "ref_hash":
            raise RunFailed("the server referred to a cached message that was never claimed")
        elif kind == "script_finished":
            self._finish(msg)

    def _finish(self, msg: ForwardMsg) -> None:
        run = self._current or RunSeen(msg.metadata.run.script_run_id, tuple(msg.metadata.run.fragment_ids), 0.0)
        run.status = msg.script_finished
        if run.status == ForwardMsg.FINISHED_SUCCESSFULLY:  # the frontend forgets widgets not drawn again
            self.widgets = {i: w for i, w in self.widgets.items() if i in self._seen}
        self._end_run(run)

    def _end_run(self, run: RunSeen, lost: bool = False) -> None:
        """A run ended: by its script_finished, or `lost` when the next run starts without it. Streamlit drops the
        events a ScriptRunner has not delivered yet when a rerun request finds it stopping (AppSession then starts
        a new ScriptRunner and ignores the old one's events: the run's last elements, page_info_changed,
        script_finished), so a request still returns when such a run served it."""
        self._current = None
        run.finished, run.lost = time.monotonic(), lost
        if lost:
            run.status = LOST
        self.runs.append(run)
        if self.on_run is not None:
            self.on_run(run)
        for waiter in self._waiters:
            if not waiter.served_by(run):
                continue
            if run.status in FINISHED or lost:
                waiter.resolve(run)
            elif run.status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                waiter.early = run
            else:
                waiter.fail(RunFailed(f"script_finished {ForwardMsg.ScriptFinishedStatus.Name(run.status)}"))
