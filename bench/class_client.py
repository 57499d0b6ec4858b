"""One simulated student: Streamlit's own websocket protocol, no browser (used by bench/bench_class.py).

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
        headers = {"Cookie": self.cookie} if self.cookie else {}
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
        """Change a widget: a label for selectbox / radio, a string for text. Reruns its fragment if it is in one."""
        widget = self.widget(key)
        if widget is None:
            raise KeyError(key)
        state = WidgetState(id=widget.id)
        if isinstance(value, str):
            state.string_value = value
        elif isinstance(value, bool):
            state.bool_value = value
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
