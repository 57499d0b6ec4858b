"""A class room in a real Chromium: a teacher and a student (separate browser contexts) on one server.

The teacher moves three times (page, layer, input), three rounds, then switches to 中文; the student's page must
show each move (waited for with a generous deadline: how fast is measured by bench/bench_rooms.py). Once with rooms
kept in the server's process, once in a real redis-server (TVIZ_REDIS_URL).
"""

import os
import re
from pathlib import Path

import pytest

from devtools.browser import choose_option, chromium, exceptions, new_page, open_app, rerun_after
from devtools.redis_server import redis_missing_reason
from devtools.rooms import (
    FOLLOW_DEADLINE_MS,
    HEADING,
    MAIN_LAYER,
    app_with_rooms,
    follow_seconds,
    start_room,
    teacher_moves,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # browser: skipped, saying why, without Chromium


@pytest.fixture
def screenshots(tmp_path) -> Path:
    folder = Path(os.environ.get("TV_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_a_student_follows_the_teachers_page_layer_and_input(store, screenshots):
    if store == "redis" and redis_missing_reason():
        pytest.skip(redis_missing_reason())
    with app_with_rooms(store) as (url, redis_url), chromium() as browser:
        teacher, student = new_page(browser), new_page(browser)  # each in its own browser context
        link = start_room(teacher, url)
        link_code = link.rsplit("=", 1)[1]
        code = link_code[:4]  # the short code, typed from the projector; the link's is longer, not guessable
        assert link == f"{url}/?room={link_code}" and len(link_code) == 16  # the address the teacher's browser used
        qr = teacher.get_by_test_id("stSidebar").get_by_test_id("stImage").filter(has_text="QR code")
        assert qr.locator("img").count() == 1 and qr.locator("img").bounding_box()["width"] >= 150
        if redis_url:
            import redis

            assert redis.Redis.from_url(redis_url).exists(f"tviz:room:{code}")

        open_app(student, link)
        assert student.get_by_text(f"Following the teacher in room {code}.").count() == 1
        for _, action, shown in teacher_moves(teacher):
            follow_seconds(teacher, student, action, shown)
        show_room_code = "() => { document.querySelector('[data-testid=stSidebarContent]').scrollTop = 0; }"
        teacher.evaluate(show_room_code)
        teacher.screenshot(path=str(screenshots / f"rooms_teacher_en_{store}.png"))
        student.screenshot(path=str(screenshots / f"rooms_student_en_{store}.png"))
        assert student.evaluate("() => location.search").startswith(f"?room={link_code}")

        # The language is each one's own: the teacher's 中文 leaves the student in English, still following.
        sidebar = teacher.get_by_test_id("stSidebar")
        teacher_chinese = sidebar.get_by_test_id("stRadio").first.get_by_text("中文")
        rerun_after(teacher, teacher_chinese.click, until=f"{HEADING} === '注意力'")
        layer_zh = teacher.get_by_test_id("stSelectbox").filter(
            has=teacher.get_by_test_id("stWidgetLabel").filter(has_text=re.compile(r"^层$")))
        follow_seconds(teacher, student, lambda: choose_option(teacher, layer_zh, "2"),
                       f"{MAIN_LAYER.format(label='Layer')} === '2'")
        assert student.evaluate(f"() => {HEADING}") == "Attention"
        student_chinese = student.get_by_test_id("stSidebar").get_by_test_id("stRadio").first.get_by_text("中文")
        # Under load the student's poll can send the English labels after the switch: no KeyError (test_app.py).
        rerun_after(student, student_chinese.click, until=f"{HEADING} === '注意力'")
        assert exceptions(student) == []
        assert student.get_by_text(f"正在跟随课堂 {code} 的老师。").count() == 1
        teacher.evaluate(show_room_code)
        teacher.screenshot(path=str(screenshots / f"rooms_teacher_zh_{store}.png"))
        student.screenshot(path=str(screenshots / f"rooms_student_zh_{store}.png"))


def test_a_teacher_who_reloads_still_leads_the_room_and_shows_its_code_in_presenter_mode(screenshots):
    with app_with_rooms("memory") as (url, _), chromium() as browser:
        teacher, student = new_page(browser), new_page(browser)
        link = start_room(teacher, url)
        code = link.rsplit("=", 1)[1][:4]
        open_app(student, link)
        open_app(teacher, teacher.url)  # F5: a new session, whose link carries the teacher's code
        sidebar = teacher.get_by_test_id("stSidebar")
        assert sidebar.get_by_text(f"You lead room {code} again.").count() == 1
        assert sidebar.get_by_role("button", name="End room").count() == 1
        follow_seconds(teacher, student, lambda: sidebar.get_by_role("link", name="Attention", exact=True).click(),
                       f"location.pathname === '/attention' && {HEADING} === 'Attention'")

        open_app(teacher, teacher.url + "&present=true")  # the projector's computer, in presenter mode
        badge = teacher.get_by_role("button", name=f"Room {code}")
        box = badge.bounding_box()
        title_top = teacher.evaluate("""() => {
            const text = document.createRange();
            text.selectNodeContents(document.querySelector('h1'));
            return text.getBoundingClientRect().top;
        }""")
        assert box["y"] + box["height"] <= title_top and box["x"] < 1280 / 2  # above the title, at the left
        rerun_after(teacher, badge.click)
        dialog = teacher.get_by_role("dialog")
        dialog.get_by_text(code, exact=True).wait_for(timeout=FOLLOW_DEADLINE_MS)
        assert dialog.locator("img").count() == 1 and dialog.get_by_test_id("stCode").inner_text().strip() == link
        teacher.screenshot(path=str(screenshots / "rooms_presenter_code.png"))
        assert exceptions(teacher) == [] and exceptions(student) == []


def test_in_presenter_mode_the_way_out_does_not_cover_the_rooms_news_above_the_title(screenshots):
    with app_with_rooms("memory") as (url, _), chromium() as browser:
        page = new_page(browser)
        open_app(page, f"{url}/attention?present=true&teach=ZZZZ{'A' * 20}")  # a teacher's link to no room
        news = page.get_by_test_id("stAlert").filter(has_text="does not lead a room").bounding_box()
        way_out = page.get_by_role("button", name="Leave presenter mode").bounding_box()
        page.screenshot(path=str(screenshots / "rooms_presenter_news.png"))
        assert news["x"] + news["width"] <= way_out["x"], (news, way_out)
        assert news["y"] + news["height"] <= page.locator("h1").bounding_box()["y"]
        assert exceptions(page) == []
