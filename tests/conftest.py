import pytest
import torch

from devtools.browser import chromium, streamlit_server


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
