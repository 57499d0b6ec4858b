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
from devtools.rooms import HEADING, MAIN_LAYER, app_with_rooms, follow_seconds, start_room, teacher_moves

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
        code = link.rsplit("=", 1)[1]
        assert link == f"{url}/?room={code}"  # the address the teacher's browser used
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
        assert student.evaluate("() => location.search").startswith(f"?room={code}")

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
