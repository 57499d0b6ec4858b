"""The link names the language by its code (lang=zh), while the switch shows each language by its name; links made
before codes (lang=中文, lang=English) still open in their language."""

import pytest
from streamlit.testing.v1 import AppTest
from test_app import language_before_the_sidebar, run_page


def chinese(at) -> bool:
    return at.title[0].value == "注意力" and at.sidebar.radio(key="lang").value == "zh"


@pytest.mark.parametrize("named", ["zh", "中文"])
def test_a_chinese_link_opens_in_chinese_and_names_its_code(named):
    at = run_page("attention", link={"lang": named})
    assert not at.exception and not at.error
    assert chinese(at) and at.sidebar.radio(key="lang").options == ["English", "中文"]  # names on screen
    assert at.query_params["lang"] == "zh"
    assert not at.sidebar.warning  # an older link's name is no setting the app could not use


@pytest.mark.parametrize("named", ["en", "English", None])
def test_an_english_link_opens_in_english_and_leaves_the_default_out(named):
    at = run_page("attention", link={} if named is None else {"lang": named})
    assert not at.exception and not at.error and not at.sidebar.warning
    assert at.title[0].value == "Attention" and at.sidebar.radio(key="lang").value == "en"
    assert "lang" not in at.query_params  # a default is left out of the link


def test_switching_the_language_writes_its_code_into_the_link():
    at = run_page("attention", link={"kind": "encoder_self"})
    at.sidebar.radio(key="lang").set_value("zh").run()
    assert not at.exception and chinese(at)
    assert at.query_params["lang"] == "zh" and at.query_params["kind"] == "encoder_self"


def test_switching_back_to_english_leaves_the_language_out_of_the_link(monkeypatch):
    import transformer_viz.app.session.words

    at = run_page("attention", link={"lang": "zh"})
    assert chinese(at) and at.query_params["lang"] == "zh"
    # AppTest reads the drawn widgets' labels between runs, outside the session: in the language they were drawn in.
    monkeypatch.setattr(transformer_viz.app.session.words, "lang", lambda: "zh")
    at.sidebar.radio(key="lang").set_value("en").run()
    assert not at.exception and at.session_state["lang"] == "en" and "lang" not in at.query_params


def test_a_language_the_app_does_not_have_is_named_and_left_out():
    at = run_page("attention", link={"lang": "fr"})
    assert not at.exception and at.sidebar.radio(key="lang").value == "en"
    assert "lang" not in at.query_params
    assert any("lang" in warning.value for warning in at.sidebar.warning)


@pytest.mark.parametrize(("named", "code"), [("zh", "zh"), ("中文", "zh"), ("en", "en"), ("fr", "en")])
def test_the_language_before_the_sidebar_is_the_links(named, code):
    """The page menu is made before the language switch is drawn: it reads the language from the link."""
    at = AppTest.from_function(language_before_the_sidebar)
    at.query_params["lang"] = named
    assert at.run().markdown[0].value == code


@pytest.mark.parametrize("link", [
    {"lang": "中文", "task": "英语 → 法语", "kind": "编码器自注意力", "cell_query": "3: the"},
    {"task": "English → French", "kind": "Encoder self-attention", "cell_query": "3: the"},
    {"lang": "English", "task": "英语 → 法语", "kind": "encoder_self"},  # a label of the other language names it
])
def test_an_older_link_that_names_choices_by_their_labels_opens_the_same_view(link):
    at = run_page("attention", link=link)
    assert not at.exception and not at.error
    assert not at.sidebar.warning, [w.value for w in at.sidebar.warning]  # nothing was reset
    assert (at.session_state["task"], at.session_state["kind"]) == ("en-fr", "encoder_self")
    if "cell_query" in link:
        assert at.session_state["cell_query"] == 3
    assert at.query_params["task"] == "en-fr" and at.query_params["kind"] == "encoder_self"  # now ids
