"""An unexpected error shows students its kind only: no traceback, no server path (real Chromium)."""

import pytest

from devtools.browser import chromium_page, streamlit_server

pytestmark = pytest.mark.browser  # skipped, saying why, where Chromium is missing (conftest.py)


def test_an_unexpected_error_shows_no_traceback(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text('raise ValueError("details for the log: /srv/secret/path.py")\n')
    with streamlit_server(str(script)) as url, chromium_page() as page:  # run from the project: its config applies
        page.goto(url)
        page.wait_for_selector("[data-testid=stException]", timeout=60_000)
        shown = page.get_by_test_id("stException").inner_text()
        assert "ValueError" in shown
        assert "/srv/secret" not in shown and "Traceback" not in shown and "broken.py" not in shown
