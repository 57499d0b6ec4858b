"""A room's answers and shared lesson moments, on both stores (in this process, and a real redis-server)."""

import pytest
from test_rooms_store import made

from transformer_viz.app.rooms import answers


def test_each_student_keeps_one_answer_per_question_the_latest(make_store):
    store = make_store()
    code = made(store)
    assert store.answers.answer(code, "5-abc", "s1", "3")
    assert store.answers.answer(code, "5-abc", "s2", "2")
    assert store.answers.answer(code, "5-abc", "s1", "4")  # changed their mind
    assert store.answers.answer(code, "6-def", "s1", "1.2")
    assert store.answers.answers(code, "5-abc") == {"s1": "4", "s2": "2"}
    assert store.answers.every_answer(code) == {"5-abc": {"s1": "4", "s2": "2"}, "6-def": {"s1": "1.2"}}


def test_a_question_key_with_pattern_characters_reads_only_its_own_answers(make_store):
    store = make_store()
    code = made(store)
    store.answers.answer(code, "1-*", "s1", "a")
    store.answers.answer(code, "1-x", "s1", "b")
    assert store.answers.answers(code, "1-*") == {"s1": "a"}


def test_no_answer_to_a_room_that_does_not_exist_and_the_answers_go_with_the_room(make_store):
    store = make_store()
    assert not store.answers.answer("ZZZZ", "1-a", "s1", "x")
    code = made(store)
    store.answers.answer(code, "1-a", "s1", "x")
    store.end(code)
    assert store.answers.every_answer(code) == {}
    assert not store.answers.answer(code, "1-a", "s1", "x")


def test_a_room_keeps_at_most_its_cap_of_answers_and_refuses_long_ones(make_store, monkeypatch):
    monkeypatch.setattr(answers, "MAX_ANSWERS", 3)
    store = make_store()
    code = made(store)
    assert all(store.answers.answer(code, "1-a", f"s{n}", "x") for n in range(3))
    assert not store.answers.answer(code, "1-a", "s9", "x")
    assert store.answers.answer(code, "1-a", "s0", "y")  # a replaced answer takes no more room
    with pytest.raises(ValueError):
        store.answers.answer(code, "1-a", "s0", "x" * (answers.MAX_CHARS + 1))


def test_the_lessons_moments_are_shared_with_a_new_version(make_store):
    store = make_store()
    code = made(store)
    before = store.get(code)
    assert before.lesson == {}
    shared = store.publish_lesson(code, {"revealed": ["5-abc"], "ticket": []})
    assert shared.version == before.version + 1
    assert store.get(code).lesson == {"revealed": ["5-abc"], "ticket": []}
    store.publish(code, "lesson", {"lesson_step": 6})
    assert store.get(code).lesson == {"revealed": ["5-abc"], "ticket": []}, "a view's publish keeps them"
    assert store.publish_lesson("ZZZZ", {"revealed": []}) is None
