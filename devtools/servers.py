"""App replicas (`streamlit run`) and Debian's nginx in front (deploy/nginx.conf.template), on 127.0.0.1 only,
stopped by their pids; their memory and CPU read from /proc. Used by bench/bench_class.py and tests/test_proxy.py."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import urllib.request
from collections import defaultdict
from pathlib import Path

from .browser import free_port, stop_process, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent

NGINX = "/usr/sbin/nginx"
TEMPLATE = ROOT / "deploy" / "nginx.conf.template"
PAGE_HTML_TIMEOUT = 30


def proc_tree(pid: int) -> list[int]:
    """pid and its descendants (through /proc/PID/task/*/children)."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return pids


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in itertools.chain.from_iterable(proc_tree(p) for p in pids):
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total / 1024


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of the processes and their descendants (/proc/PID/stat fields 14 and 15)."""
    ticks = 0
    for pid in itertools.chain.from_iterable(proc_tree(p) for p in pids):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all cores, every process: /proc/stat's first line)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class Servers:
    """`replicas` x `streamlit run APP` on 127.0.0.1 (and nginx in front when proxy), stopped by their pids."""

    def __init__(self, replicas: int, proxy: bool, app: str, workdir: Path, env: dict[str, str] | None = None) -> None:
        self.replicas, self.proxy, self.app, self.workdir = replicas, proxy, app, workdir
        self.env = {**os.environ, **(env or {})}
        self.apps: list[subprocess.Popen] = []
        self.nginx: subprocess.Popen | None = None
        self.ports: list[int] = []
        self.url = ""
        self.access_log = workdir / "access.log"

    def __enter__(self) -> Servers:
        try:
            for i in range(self.replicas):
                port = free_port()
                log = open(self.workdir / f"app{i}.log", "wb")  # the server holds it
                self.apps.append(subprocess.Popen(
                    [sys.executable, "-m", "streamlit", "run", self.app, "--server.address", "127.0.0.1",
                     "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                    cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=self.env))
                self.ports.append(port)
            for process, port in zip(self.apps, self.ports, strict=True):
                wait_until_serving(process, lambda port=port: health(f"http://127.0.0.1:{port}"),
                                   f"streamlit on {port}", 90, 0.3)
            self.url = f"http://127.0.0.1:{self.ports[0]}"
            if self.proxy:
                self.start_nginx()
            return self
        except BaseException:
            self.__exit__()
            raise

    def start_nginx(self) -> None:
        self.nginx, self.url = start_nginx([f"127.0.0.1:{p}" for p in self.ports], self.workdir, self.access_log)

    def __exit__(self, *_exc) -> None:
        if self.nginx is not None:
            stop_process(self.nginx)
        for process in self.apps:
            stop_process(process)

    @property
    def app_pids(self) -> list[int]:
        return [p.pid for p in self.apps]

    def routes(self, offset: int) -> dict[str, set[str]]:
        """replica cookie -> the upstreams its requests went to, from the access log past `offset` bytes."""
        routes: dict[str, set[str]] = defaultdict(set)
        with open(self.access_log) as f:
            f.seek(offset)
            for line in f:
                found = re.search(r"upstream=(\S+) route=(\S+)", line)
                if found:
                    routes[found[2]].add(found[1])
        return routes


NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only, whatever the environment


def render_template(replicas: list[str], listen: str, access_log: Path) -> str:
    """deploy/nginx.conf.template with its placeholders filled as deploy/replicas.envsh fills them in compose."""
    values = {"TVIZ_LISTEN": listen, "TVIZ_ACCESS_LOG": str(access_log),
              "TVIZ_UPSTREAM_SERVERS": " ".join(f"server {address};" for address in replicas),
              "TVIZ_REPLICA_ROUTES": " ".join(f"{address} {address};" for address in replicas)}
    return re.sub(r"\$\{(TVIZ_\w+)\}", lambda found: values[found[1]], TEMPLATE.read_text())


def start_nginx(replicas: list[str], workdir: Path, access_log: Path) -> tuple[subprocess.Popen, str]:
    """Debian's nginx with the template in front of `replicas` ("127.0.0.1:PORT"), its files in `workdir`; the
    process (stop it with stop_process) and its url, once it serves /_stcore/health."""
    port = free_port()
    (workdir / "tviz.conf").write_text(render_template(replicas, f"127.0.0.1:{port}", access_log))
    kinds = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    temp = "\n".join(f"    {kind}_temp_path {workdir}/{kind};" for kind in kinds)
    conf = workdir / "nginx.conf"
    conf.write_text(f"worker_processes 2;\npid {workdir}/nginx.pid;\nerror_log {workdir}/error.log;\n"
                    f"events {{ worker_connections 1024; }}\n"
                    f"http {{\n{temp}\n    include {workdir}/tviz.conf;\n}}\n")
    os.chmod(workdir, 0o755)  # nginx's workers run as nobody
    check = subprocess.run([NGINX, "-t", "-c", str(conf), "-p", str(workdir)], capture_output=True, text=True)
    if check.returncode:
        raise RuntimeError(f"nginx -t: {check.stderr}")
    log = open(workdir / "nginx.out", "wb")  # noqa: SIM115
    nginx = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(workdir), "-g", "daemon off;"],
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_until_serving(nginx, lambda: health(url), f"nginx on {port}", 30, 0.2)
    return nginx, url


def health(url: str) -> bool:
    with NO_PROXY.open(f"{url}/_stcore/health", timeout=2) as response:
        return response.status == 200


def get_page(url: str) -> str | None:
    """GET a page as a browser does first; the replica cookie nginx sets, if any ("tviz_replica=...")."""
    with NO_PROXY.open(url, timeout=PAGE_HTML_TIMEOUT) as response:
        response.read()
        for header in response.headers.get_all("Set-Cookie") or []:
            if header.startswith("tviz_replica="):
                return header.split(";", 1)[0]
    return None


