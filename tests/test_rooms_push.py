"""rooms/push.py's watcher without a server: one store read per room, one rerun per change a student has not seen,
and a session that has gone is forgotten. (tests/test_follow_protocol.py checks the push on a real server.)"""

import itertools
import time

import pytest

from transformer_viz.app.rooms import push
from transformer_viz.app.rooms.store import RoomState, RoomStoreError
from transformer_viz.app.server.state import Joined


class Store:
    """A room store whose rooms are set by the test; it counts its reads."""

    def __init__(self, **rooms: RoomState | None) -> None:
        self.rooms, self.reads, self.down = rooms, 0, False

    def get(self, code: str) -> RoomState | None:
        self.reads += 1
        if self.down:
            raise RoomStoreError("unreachable", "the test took it away")
        return self.rooms.get(code)


def later():
    """A clock that moves on by more than PUSH_GAP_SECONDS at every look (the tests that do not time the gap)."""
    return itertools.count(step=push.PUSH_GAP_SECONDS + 1).__next__


def room(version: int, teacher_seen: float | None = None) -> RoomState:
    now = time.time()
    return RoomState("attention", {}, version, now, teacher_seen=now if teacher_seen is None else teacher_seen)


@pytest.fixture
def reruns() -> "Reruns":
    """The sessions the test's watcher asked to rerun (its `rerun=reruns.ask`); "gone" has left the server."""
    return Reruns()


class Reruns(list):
    def ask(self, session_id: str) -> bool:
        self.append(session_id)
        return session_id != "gone"


def test_a_new_version_reruns_each_student_who_has_not_seen_it_once_with_one_read_per_room(reruns):
    store = Store(ABCD=room(3), EFGH=room(1))
    watcher = push.Watcher(every=None, clock=later(), rerun=reruns.ask)
    for session, code, seen in [("s1", "ABCD", 2), ("s2", "ABCD", 2), ("s3", "ABCD", 3), ("s4", "EFGH", 1)]:
        watcher.watch(session, store, Joined(code, code + "k", seen=seen), was_down=False)
    watcher.push_once()
    assert sorted(reruns) == ["s1", "s2"] and store.reads == 2
    watcher.push_once()  # their runs have not reported back yet: no second rerun
    assert sorted(reruns) == ["s1", "s2"]
    watcher.watch("s1", store, Joined("ABCD", "ABCDk", seen=3), was_down=False)  # s1's run took version 3
    store.rooms["ABCD"] = room(4)
    watcher.push_once()  # s2 still has its rerun to come
    assert sorted(reruns) == ["s1", "s1", "s2", "s3"]


def test_an_ended_room_an_absent_teacher_and_the_store_going_away_and_back_rerun_the_students(reruns):
    store = Store(ABCD=room(3, teacher_seen=time.time() - 5 * 60))
    watcher = push.Watcher(every=None, clock=later(), rerun=reruns.ask)
    watcher.watch("away", store, Joined("ABCD", "ABCDk", seen=3), was_down=False)  # saw the teacher here
    watcher.watch("ended", store, Joined("WXYZ", "WXYZk", seen=3), was_down=False)
    watcher.push_once()
    assert sorted(reruns) == ["away", "ended"]
    store.down = True
    watcher.watch("down", store, Joined("ABCD", "ABCDk", seen=3, away=5), was_down=False)
    watcher.push_once()
    assert reruns[-1] == "down"
    watcher.watch("down", store, Joined("ABCD", "ABCDk", seen=3, away=5), was_down=True)  # it says so now
    watcher.push_once()
    assert reruns.count("down") == 1
    store.down = False
    watcher.push_once()
    assert reruns.count("down") == 2


def test_a_session_that_has_gone_is_forgotten(reruns):
    store = Store(ABCD=room(2))
    watcher = push.Watcher(every=None, clock=later(), rerun=reruns.ask)
    watcher.watch("gone", store, Joined("ABCD", "ABCDk", seen=1), was_down=False)
    watcher.push_once()
    watcher.watch("gone", store, Joined("ABCD", "ABCDk", seen=1), was_down=False)  # (a late report)
    watcher.forget("gone")
    watcher.push_once()
    assert reruns == ["gone"] and store.reads == 1


def test_a_teacher_changing_the_view_many_times_a_second_reruns_a_student_at_most_every_gap(reruns):
    store, now = Store(ABCD=room(1)), [0.0]
    watcher = push.Watcher(every=None, clock=lambda: now[0], rerun=reruns.ask)
    for version in range(2, 12):  # ten changes, each seen by the student's run at once
        store.rooms["ABCD"] = room(version)
        watcher.push_once()
        watcher.watch("s1", store, Joined("ABCD", "ABCDk", seen=version - 1), was_down=False)
        now[0] += push.PUSH_GAP_SECONDS / 10
    assert reruns == ["s1"]
    now[0] += push.PUSH_GAP_SECONDS
    watcher.push_once()
    assert reruns == ["s1", "s1"]  # the last change is drawn once the gap has passed
