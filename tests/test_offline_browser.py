"""Nothing the page loads comes from outside the server: a classroom without internet sees no error, and a school
that blocks the outside tells no third party who visits (issue 24: the favicon came from fonts.gstatic.com)."""

import base64
import urllib.parse

import pytest

from devtools.browser import new_page, open_app
from transformer_viz.app.main import FAVICON

pytestmark = pytest.mark.browser

PAGES = ("", "attention", "head")  # the lesson (formulas), the figures' page, the page of step-by-step arithmetic


def test_every_request_of_the_page_goes_to_the_server_itself(app_url, browser):
    """The browser may reach 127.0.0.1 only; every other request is blocked and counted (there must be none)."""
    outside = []

    def only_the_server(route):
        url = route.request.url
        if url.startswith(("data:", "blob:")) or urllib.parse.urlsplit(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page = new_page(browser)
    page.route("**/*", only_the_server)
    for path in PAGES:
        open_app(page, f"{app_url}/{path}", figures=bool(path))
    icon = page.evaluate("document.querySelector(\"link[rel='shortcut icon']\").href")
    page.close()
    assert outside == []
    assert icon == "data:image/svg+xml;base64," + base64.b64encode(FAVICON.read_bytes()).decode()
