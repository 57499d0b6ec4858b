"""The class answers (AppTest, one store): each following student answers on their own device, the teacher sees how
many answered and the spread (never who), the teacher's Reveal is the room's, and alone a student is told whether
the model agrees."""

import csv
import io
import json

from test_rooms import session, store

from transformer_viz.app.rooms.ticket import class_csv
from transformer_viz.app.server import state
from transformer_viz.figures.fit import PROJECTOR_FONT_PX
from transformer_viz.lessons.question import CHOICE, NUMBER, Choice, Question

MASKS = 5  # the lesson's step about masks: a number question (how many cells the padding adds)


def answer_widget(at, kind: str):
    (widget,) = [w for w in at.get(kind) if str(w.key).startswith("answer_")]
    return widget


def lesson_room():
    teacher = session({state.LESSON_STEP: str(MASKS)})
    teacher.button(key=state.ROOM_START).click().run()
    assert not teacher.exception
    code = teacher.session_state[state.TEACHING].code
    students = [session({state.ROOM: code}) for _ in range(2)]
    return teacher, code, students


def texts(at) -> str:
    return "\n".join(e.value for kind in ("markdown", "caption", "info") for e in at.get(kind))


def test_followers_answer_the_teacher_sees_the_count_and_spread_and_reveals_for_the_room():
    teacher, code, students = lesson_room()
    for student, said in zip(students, (3, 5), strict=True):
        assert student.session_state[state.LESSON_STEP] == MASKS
        assert not [e for e in student.expander if e.label == "Reveal the answer"], "a follower cannot reveal early"
        assert "the teacher reveals the answer" in texts(student)
        answer_widget(student, "number_input").set_value(said).run()
        assert not student.exception, [e.value for e in student.exception]
    teacher.run()
    assert "2 answered so far." in texts(teacher)
    (spread,) = [c for c in teacher.get("plotly_chart") if c.proto.id.endswith("class_answers")]
    assert "The class's answers (2)" in spread.proto.spec
    for student in students:
        assert student.session_state[state.JOINED].student not in texts(teacher) + spread.proto.spec
    teacher.session_state[state.LESSON_REVEAL.format(MASKS)] = True
    teacher.run()
    assert store().get(code).lesson["revealed"], "the teacher's reveal is the room's"
    right, wrong = (student.run() for student in students)  # what the push does: the next run follows
    assert "You said 3; the model says 3: right." in texts(right)
    assert "You said 5; the model says 3." in texts(wrong)
    assert "3 cells" in texts(wrong)  # the answer itself
    assert any(c.proto.id.endswith("class_answers_revealed") for c in wrong.get("plotly_chart"))


def test_a_student_alone_answers_then_reveals_and_is_told_whether_the_model_agrees():
    at = session({state.LESSON_STEP: str(MASKS)})
    answer_widget(at, "number_input").set_value(2).run()
    assert "You said" not in texts(at)
    at.session_state[state.LESSON_REVEAL.format(MASKS)] = True
    at.run()
    assert "You said 2; the model says 3." in texts(at)
    assert answer_widget(at, "number_input").disabled, "the answer is locked once revealed"


def test_a_follower_who_leaves_may_reveal_on_their_own():
    _, _, (student, _) = lesson_room()
    student.button(key=state.ROOM_LEAVE).click().run()
    assert [e for e in student.expander if e.label == "Reveal the answer"]


def go_to_step(at, number: int):
    at.session_state[state.LESSON_STEP] = number
    at.session_state["_lesson_set_up"] = None  # as the step chooser does: the step sets its view up
    return at.run()


def test_the_exit_ticket_asks_again_what_the_class_met_and_the_teacher_downloads_the_counts():
    teacher, code, students = lesson_room()
    for number in (4, 6, MASKS):  # the room met three steps' questions (scaling, masks, heads)
        go_to_step(teacher, number)
        for student in students:
            student.run()
    go_to_step(teacher, 12)
    ticket = store().get(code).lesson["ticket"]
    assert len(ticket) == 3 and "Exit ticket" in [h.value for h in teacher.subheader]
    for student, said in zip(students, (1.0, 7.0), strict=True):
        student.run()
        assert student.session_state[state.LESSON_STEP] == 12
        (scaling,) = [w for w in student.number_input if str(w.key).startswith("answer_exit-4-")]
        scaling.set_value(said).run()
    teacher.run()
    assert "2 answered · 50% right" in texts(teacher)  # about 1.2 keys: 1 is right, 7 is not
    assert "Download the class's answers (CSV)" in [b.proto.label for b in teacher.get("download_button")]
    teacher.toggle(key=state.TICKET_REVEAL).set_value(True).run()
    right = students[0].run()
    assert "The model's answer: 1.2." in texts(right) and "You said 1; the model says 1.2: right." in texts(right)


def test_the_csv_has_each_questions_answers_and_counts_and_no_student():
    choice = Question("Which head?", CHOICE, lambda host: "", truth="2", step=6,
                      choices=(Choice("1", "Head 1"), Choice("2", "Head 2")))
    number = Question("How many keys?", NUMBER, lambda host: "", truth=1.16, tolerance=0.5, low=1, high=8, step=4)
    every = {"6-a": {"s1": "2", "s2": "2", "s3": "1"}, "exit-4-b": {"s1": "1", "s9": "7"}, "9-gone": {"s1": "x"}}
    rows = list(csv.reader(io.StringIO(class_csv({"6-a": choice, "4-b": number}, every))))
    assert rows == [["step", "exit_ticket", "question", "answer", "count", "right"],
                    ["6", "False", "Which head?", "Head 1", "1", "False"],
                    ["6", "False", "Which head?", "Head 2", "2", "True"],
                    ["4", "True", "How many keys?", "1", "1", "True"],
                    ["4", "True", "How many keys?", "7", "1", "False"]]


def test_a_count_is_typed_as_a_whole_number_and_the_projector_reads_the_spread_in_its_own_font():
    """Step 5 asks a count: its box shows "3", not "3.00", and steps by 1. In presenter mode the teacher's chart has
    no text under the projector's smallest font (the builders' default is a screen's)."""
    teacher, _, (student, _) = lesson_room()
    box = answer_widget(student, "number_input")
    assert (box.proto.format, box.step) == ("%g", 1)
    box.set_value(3).run()
    teacher.session_state[state.PRESENT] = True
    teacher.run()
    (spread,) = [c for c in teacher.get("plotly_chart") if c.proto.id.endswith("class_answers")]
    layout = json.loads(spread.proto.spec)["layout"]
    assert layout["font"]["size"] >= PROJECTOR_FONT_PX


def test_the_class_figure_is_built_once_for_the_class():
    """The teacher's Reveal reruns every follower at once, each drawing the same answers: one figure for all (a few ms
    of each follower's run), another once revealed."""
    from transformer_viz.app.rooms.answering import class_figure

    count = Question("How many?", NUMBER, lambda host: "", truth=3.0, low=0.0, high=64.0, step=MASKS)
    head = Question("Which head?", CHOICE, lambda host: "", truth="2", step=6,
                    choices=(Choice("1", "Head 1"), Choice("2", "Head 2")))
    for question, answers in ((count, ["3", "5"]), (head, ["1", "2", "2"])):
        revealed = class_figure(question, answers, True)
        assert class_figure(question, answers[::-1], True) is revealed  # in whatever order the store gives them
        assert class_figure(question, answers, False) is not revealed
