import os
import subprocess
from pathlib import Path

import pytest
import torch
from helpers import HF_FAMILIES

from devtools.browser import browser_missing_reason, chromium, streamlit_server
from devtools.redis_server import redis_missing_reason, redis_server
from transformer_viz.app.rooms.store import MemoryRoomStore, RedisRoomStore
from transformer_viz.weights import hf

ROOT = Path(__file__).resolve().parents[1]
CACHES = {"__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache"}


def files_git_does_not_track() -> set[str] | None:
    """The checkout's files that git does not track, ignored ones too (caches left out); None without git."""
    try:
        listed = subprocess.run(["git", "ls-files", "--others", "-z"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return {path for path in listed.stdout.decode().split("\0") if path and not CACHES & set(Path(path).parts)}


def pytest_collection_modifyitems(config, items):
    """Tests marked `browser` drive Debian's Chromium: where it is missing they are skipped, saying why.

    The files with slow or browser tests come first: pytest-xdist hands out whole files in this order, and
    starting the longest ones first keeps both workers busy until the end (the order within a file is kept)."""
    missing = browser_missing_reason()
    if missing is not None:
        skip = pytest.mark.skip(reason=f"no real browser here: {missing}")
        for item in items:
            if "browser" in item.keywords:
                item.add_marker(skip)
    long_files = {item.path for item in items if "browser" in item.keywords or "slow" in item.keywords}
    items.sort(key=lambda item: item.path not in long_files)


@pytest.fixture(scope="session", autouse=True)
def _nothing_written_into_the_checkout():
    """Tests write under tmp_path (screenshots too, or $TV_SCREENSHOTS when set), never into the repository."""
    before = files_git_does_not_track()
    yield
    after = files_git_does_not_track()
    if before is not None and after is not None and not os.environ.get("TV_SCREENSHOTS"):
        assert after <= before, f"the tests wrote into the checkout: {sorted(after - before)}"


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _one_thread():
    # Tiny ops: a second thread only adds waiting when other processes share the cores.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def app_url():
    """One `streamlit run` of the app on 127.0.0.1 per browser-test module, stopped by its pid."""
    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, driven by Playwright, per browser-test module."""
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def redis_url():
    if redis_missing_reason():
        pytest.skip(redis_missing_reason())
    with redis_server() as url:
        yield url


@pytest.fixture(params=["memory", "redis"])
def make_store(request):
    """Room stores (tests/test_rooms_store.py, test_rooms_answers.py): a function (idle=..., max_rooms=...) -> a
    new, empty store of each kind."""
    if request.param == "memory":
        yield lambda **kwargs: MemoryRoomStore(**kwargs)
        return
    import redis

    client = redis.Redis.from_url(request.getfixturevalue("redis_url"), decode_responses=True)
    client.flushdb()
    yield lambda **kwargs: RedisRoomStore(client, **kwargs)
    client.close()


@pytest.fixture(scope="module")
def hf_folders(tmp_path_factory):
    """A tiny Hugging Face model of each family in HF_FAMILIES, saved under a folder the server may open."""
    if hf.missing_reason() is not None:
        pytest.skip(hf.missing_reason())
    from devtools.hf_tiny import save_tiny

    with pytest.MonkeyPatch.context() as patch:  # the server opens folders under TVIZ_HF_DIRS only
        patch.setenv("TVIZ_HF_DIRS", str(tmp_path_factory.getbasetemp()))
        yield {family: str(save_tiny(family, tmp_path_factory.mktemp(family))) for family in HF_FAMILIES.values()}
