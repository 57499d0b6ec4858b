"""The exit ticket: on the lesson's last step, a few of the questions the class went through, asked again and
answered the same way; the teacher sees how many answered and the share right per question, reveals the ticket
for the room, and downloads the room's answers as a CSV (per question, each answer and its count: no names, no
student numbers)."""

from __future__ import annotations

import csv
import io

import streamlit as st

from transformer_viz.app.rooms import answering
from transformer_viz.app.rooms.follow import following
from transformer_viz.app.server import state
from transformer_viz.app.session.charts import chart
from transformer_viz.app.session.words import tr
from transformer_viz.lessons.question import Question, distribution, share_right

MOST, LEAST = 5, 3  # questions on a ticket
TICKET = "ticket"  # the ticket's key among the room's revealed questions
PREFIX = "exit-"  # a ticket answer's question key: the question's own, after this


def drawn(asked: dict[str, Question], here: int) -> list[str]:
    """Up to MOST keys of the questions asked, the latest of each step but this one, spread over the lesson."""
    latest = {q.step: key for key, q in asked.items() if q.answerable and q.step != here}
    keys = [latest[step] for step in sorted(latest)]
    if len(keys) <= MOST:
        return keys
    return [keys[round(i * (len(keys) - 1) / (MOST - 1))] for i in range(MOST)]


def ticket_keys(here: int) -> list[str]:
    """The ticket's questions: the teacher's choice for a follower; else drawn from this session's questions (the
    teacher shares them with the room)."""
    if following() is not None:
        return list(answering.room_lesson().get(TICKET, []))
    keys = drawn(st.session_state.get(state.ASKED, {}), here)
    if answering.teaching() is not None and keys != answering.room_lesson().get(TICKET):
        answering.share_lesson(ticket=keys)
    return keys


def exit_ticket(here: int) -> None:
    """The ticket's section, below the last step."""
    st.subheader(tr("ticket.title"))
    keys = ticket_keys(here)
    asked = st.session_state.get(state.ASKED, {})
    if len(keys) < LEAST:
        st.caption(tr("ticket.few", least=LEAST, n=len(keys)))
    follower, teacher = following() is not None, answering.teaching() is not None
    revealed = answering.shared_reveal(TICKET) if follower else bool(st.session_state.get(state.TICKET_REVEAL))
    for n, key in enumerate(keys, start=1):
        question = asked.get(key)
        box = st.container(border=True)
        if question is None:
            box.caption(tr("ticket.missed", n=n))
            continue
        box.markdown(f"**{n}.** {question.text}")
        if teacher:
            with box:
                live_share(question, PREFIX + key, revealed)
        else:
            answering.answer_box(box, question, PREFIX + key, locked=revealed)
        if revealed:
            box.markdown(tr("ticket.truth", truth=question.truth_label()) + " " +
                         answering.verdict(question, PREFIX + key))
    if not follower:
        st.toggle(tr("ticket.reveal"), key=state.TICKET_REVEAL)
        if revealed and teacher and not answering.shared_reveal(TICKET):
            answering.share_lesson(revealed=[*answering.room_lesson().get("revealed", [])[-63:], TICKET])
    if teacher:
        download(asked)


@st.fragment(run_every=answering.CLASS_SECONDS)
def live_share(question: Question, key: str, revealed: bool) -> None:
    """The teacher's page: how many answered this ticket question, and the share right (the spread once revealed)."""
    answers = answering.class_answers(answering.teaching().code, key) if answering.teaching() else []
    right = share_right(question, answers)
    st.caption(tr("ticket.share", n=len(answers), right="–" if right is None else f"{right:.0%}"))
    if revealed and answers:
        chart(answering.class_figure(question, answers, True), key=f"ticket_{key}")


def download(asked: dict[str, Question]) -> None:
    every = answering.every_class_answer()
    st.download_button(tr("ticket.csv"), class_csv(asked, every), file_name="class-answers.csv", mime="text/csv",
                       key=state.ANSWERS_CSV, icon=":material/download:")


def class_csv(asked: dict[str, Question], every: dict[str, dict[str, str]]) -> str:
    """The room's answers, one row per question and answer given: step, ticket or not, the question, the answer,
    how many gave it, whether it is the model's. No student appears."""
    out = io.StringIO()
    rows = csv.writer(out)
    rows.writerow(["step", "exit_ticket", "question", "answer", "count", "right"])
    for key, answers in every.items():
        question = asked.get(key.removeprefix(PREFIX))
        if question is None or not question.answerable:
            continue
        for said, count in distribution(question, list(answers.values())).items():
            rows.writerow([question.step, key.startswith(PREFIX), question.text, question.label_of(said), count,
                           question.is_right(said)])
    return out.getvalue()
