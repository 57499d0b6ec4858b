"""What a user types is shown as typed: no link, formatting, formula or script comes out of it (real Chromium)."""

from urllib.parse import urlencode

import pytest

from devtools.browser import chromium_page, exceptions, open_app, streamlit_server

pytestmark = pytest.mark.browser  # skipped, saying why, where Chromium is missing (conftest.py)

HOSTILE = ("[click](https://evil.example/login) **bold** _it_ :red[red] $x^2$ www.evil.example "
           "<img/src=x/onerror=window.__pwned=1> :smile:")
# Everything in the main area that would mean the text was read as Markdown, HTML or LaTeX.
RENDERED = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  return {
    links: Array.from(main.querySelectorAll('a[href]')).map(a => new URL(a.href).hostname)
      .filter(h => h.includes('evil')),
    bold: Array.from(main.querySelectorAll('strong, b')).filter(e => e.textContent.includes('bold')).length,
    italic: Array.from(main.querySelectorAll('em, i')).filter(e => e.textContent.includes('it')).length,
    formulas: main.querySelectorAll('.katex').length,
    images: main.querySelectorAll('img[src="x"]').length,
    pwned: window.__pwned === 1,
    shown: main.innerText,
  };
}"""


def test_hostile_text_is_shown_literally():
    with streamlit_server() as url, chromium_page() as page:
        # en-fr knows none of these words: every one of them is listed, as typed, in the <unk> warning.
        open_app(page, f"{url}/attention?" + urlencode({"task": "en-fr", "src_text": HOSTILE}))
        assert exceptions(page) == []
        rendered = page.evaluate(RENDERED)
        assert rendered["links"] == [] and rendered["images"] == 0 and not rendered["pwned"]
        assert (rendered["bold"], rendered["italic"], rendered["formulas"]) == (0, 0, 0)
        for typed in ("[click](https://evil.example/login)", "**bold**", ":red[red]", "$x^2$", "www.evil.example",
                      ":smile:"):
            assert typed in rendered["shown"], typed



# A blank line ends a code span: what follows it in a link would render as Markdown (the notice above the page
# quotes the first 20 characters of a room link's code; the <unk> warning every word of an input).
AFTER_A_BLANK_LINE = {
    "room": "\n\n[Join](http://e.vl)",
    "src_text": "x\n\n**Session** [in](http://e.vl/a) ![](http://e.vl/p.png) [Join][1]\r\n\r\n[1]: http://e.vl/r",
    "tgt_text": "\u2028\u2029**Session** [in](http://e.vl/a)\v\f![](http://e.vl/p.png)",
}
RENDERED_ANYWHERE = """() => ({
  links: Array.from(document.querySelectorAll('a[href]')).map(a => new URL(a.href).hostname)
    .filter(h => h === 'e.vl'),
  images: Array.from(document.querySelectorAll('img')).filter(i => (i.src || '').includes('e.vl')).length,
  bold: Array.from(document.querySelectorAll('strong, b')).filter(e => e.textContent.includes('Session')).length,
  shown: document.body.innerText,
})"""


@pytest.mark.parametrize("field", AFTER_A_BLANK_LINE)
def test_line_breaks_in_a_link_do_not_let_the_rest_render(field):
    with streamlit_server() as url, chromium_page() as page:
        open_app(page, f"{url}/masks?" + urlencode({"task": "en-fr", field: AFTER_A_BLANK_LINE[field]}))
        assert exceptions(page) == []
        page.get_by_test_id("stSidebar").get_by_text("Class room").click()  # nothing in the room section may render
        rendered = page.evaluate(RENDERED_ANYWHERE)
        assert rendered["links"] == [] and rendered["images"] == 0 and rendered["bold"] == 0, rendered
        if field == "room":  # the notice quotes what was typed, the line break shown for what it is
            assert "⏎⏎[Join](http://e.vl" in rendered["shown"]
