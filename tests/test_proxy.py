"""Two app replicas behind Debian's nginx (deploy/nginx.conf.template) with Redis: the scale-out topology of
deploy/compose.yaml on loopback. Each browser session stays on one replica, and a class room started through one
replica is followed from the other."""

import shutil
import subprocess

import pytest

from devtools.browser import EXCEPTION, new_page, open_app
from devtools.redis_server import redis_server
from devtools.rooms import press_start_room
from devtools.servers import NGINX, Servers

missing = None if shutil.which(NGINX) else f"{NGINX} is not installed"
missing = missing or (None if shutil.which("redis-server") else "redis-server is not installed")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(missing is not None, reason=f"cannot run the topology here: {missing}")]


@pytest.fixture(scope="module")
def topology(tmp_path_factory):
    with redis_server() as redis_url, Servers(replicas=2, proxy=True, app="app.py",
                                              workdir=tmp_path_factory.mktemp("proxy"),
                                              env={"TVIZ_REDIS_URL": redis_url,  # and the check as the launcher's
                                                   "STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED": "true"}) as servers:
        yield servers


def test_the_shipped_template_passes_nginx_t(topology):
    result = subprocess.run([NGINX, "-t", "-c", str(topology.workdir / "nginx.conf"), "-p", str(topology.workdir)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_warm_up_check_is_not_reachable_through_nginx(topology):
    """Each request to Streamlit's script health check runs the app once: only a replica's own launcher asks."""
    from urllib.error import HTTPError

    from devtools.servers import NO_PROXY

    replica = f"http://127.0.0.1:{topology.ports[0]}"
    with NO_PROXY.open(f"{replica}/_stcore/script-health-check", timeout=120) as answer:
        assert answer.status == 200  # there, as `transformer-viz` serves it
    with pytest.raises(HTTPError, match="404"):
        NO_PROXY.open(f"{topology.url}/_stcore/script-health-check", timeout=30)


def open_student(browser, url: str, figures: bool = True):
    """A new browser context (a new student, no cookie yet) on `url`; (page, its replica cookie)."""
    page = new_page(browser)
    open_app(page, url, figures=figures)
    assert page.locator(EXCEPTION).count() == 0
    return page, next(c["value"] for c in page.context.cookies() if c["name"] == "tviz_replica")


def test_each_session_stays_on_one_replica_and_the_sessions_spread(topology, browser):
    seen: dict[str, set[str]] = {}
    while len(set().union(*seen.values())) < 2:  # both replicas served someone (new students are placed in turn)
        assert len(seen) < 30, seen
        page, route = open_student(browser, f"{topology.url}/attention")
        assert page.get_by_text("Cross-attention (decoder → encoder)").count() > 0
        page.context.close()
        seen[route] = topology.routes(0)[route]
        assert len(seen[route]) == 1, seen[route]  # the page, its scripts and its websocket: one replica


def test_a_room_started_on_one_replica_is_followed_from_the_other(topology, browser):
    teacher, teacher_route = open_student(browser, f"{topology.url}/overview")
    replica = topology.routes(0)[teacher_route]
    sidebar = teacher.get_by_test_id("stSidebar")
    link_code = press_start_room(teacher).rsplit("=", 1)[1]
    code = link_code[:4]  # the short code the page shows
    for _ in range(20):  # a student whom nginx sends to the other replica (it places each browser in turn)
        student, route = open_student(browser, f"{topology.url}/?room={link_code}", figures=False)
        if topology.routes(0)[route] != replica:
            break
        student.context.close()
    else:
        pytest.fail("nginx sent 20 browsers in a row to the teacher's replica")
    student.get_by_text(f"Following the teacher in room {code}.").wait_for(timeout=30_000)
    sidebar.get_by_role("link", name="Masks", exact=True).click()
    student.wait_for_function("() => location.pathname === '/masks'", timeout=30_000)
