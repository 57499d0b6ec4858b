"""A hostile student's flood of rooms and code guesses (issue 41, item 1): limits per client address, in both
stores, and a full store that makes room for a teacher by forgetting rooms nobody ever joined."""

import itertools

import pytest
from test_rooms import session

from transformer_viz.app.rooms import common, limiter
from transformer_viz.app.rooms import store as store_module
from transformer_viz.app.rooms.limiter import Rate
from transformer_viz.app.rooms.store import EMPTY_GRACE, RoomStoreError
from transformer_viz.app.server import state
from transformer_viz.app.server.addresses import is_trusted

OWNERS = (f"flooder-{n}" for n in itertools.count())


@pytest.fixture
def clock(monkeypatch):
    """The stores' wall clock, moved by hand (a room's age decides whether it may be evicted)."""
    now = [1_000_000.0]
    monkeypatch.setattr(store_module.time, "time", lambda: now[0])
    return now


def test_a_full_store_forgets_the_oldest_room_nobody_joined_for_a_new_teacher(make_store, clock):
    store = make_store(max_rooms=3)
    codes = []
    for _ in range(3):  # a second apart: the oldest is codes[0] (whatever the codes drawn)
        codes.append(store.create(next(OWNERS)).code)
        clock[0] += 1
    store.mark_joined(codes[0])  # a class's room
    with pytest.raises(RoomStoreError):  # the empty ones are too young to be given up
        store.create(next(OWNERS))
    clock[0] += EMPTY_GRACE + 1
    teacher = store.create("a real teacher").code
    assert store.get(codes[0]) is not None, "a room a student joined is never evicted"
    assert store.get(codes[1]) is None and store.get(codes[2]) is not None  # the oldest empty one went
    store.mark_joined(codes[2])
    store.mark_joined(teacher)
    with pytest.raises(RoomStoreError):  # every room is a class's: full
        store.create(next(OWNERS))


def test_one_address_may_start_so_many_rooms_per_window_whatever_its_sessions(make_store):
    store = make_store()
    rate = Rate(3, 600.0)
    assert [store.limiter.allow("start", "203.0.113.7", rate) for _ in range(3)] == [0.0] * 3
    wait = store.limiter.allow("start", "203.0.113.7", rate)
    assert 0 < wait <= 600
    assert store.limiter.allow("start", "198.51.100.1", rate) == 0.0  # another address
    assert store.limiter.allow("guess", "203.0.113.7", rate) == 0.0  # another action


def test_fresh_sessions_from_one_address_cannot_start_rooms_without_end(monkeypatch):
    monkeypatch.setattr(common, "client_address", lambda: "203.0.113.9")
    monkeypatch.setattr(limiter, "ROOM_STARTS", Rate(2, 600.0))
    monkeypatch.setattr("transformer_viz.app.rooms.teach.ROOM_STARTS", Rate(2, 600.0))
    started = []
    for _ in range(3):
        at = session()
        at.button(key=state.ROOM_START).click().run()
        started.append(state.TEACHING in at.session_state)
    assert started == [True, True, False]
    assert any("Too many rooms were started from this network" in w.value for w in at.sidebar.warning)


def test_fresh_sessions_from_one_address_cannot_guess_codes_without_end(monkeypatch):
    monkeypatch.setattr(common, "client_address", lambda: "203.0.113.10")
    monkeypatch.setattr("transformer_viz.app.rooms.follow.CODE_GUESSES", Rate(4, 60.0))
    said = []
    for _ in range(3):  # each session may try 5: the address allows 4 in all
        at = session()
        for _ in range(2):
            at.sidebar.text_input(key=state.ROOM_CODE).input("ZZZZ")
            at.sidebar.button(key=state.ROOM_JOIN).click().run()
            said.append(" ".join(w.value for w in at.sidebar.warning))
    assert sum("Too many room codes were tried from this network" in s for s in said) == 2


@pytest.mark.parametrize(("peer", "proxies", "trusted"), [
    ("172.18.0.5", "10.0.0.0/8,172.16.0.0/12", True), ("203.0.113.1", "10.0.0.0/8,172.16.0.0/12", False),
    ("10.1.2.3", "", False), ("not an address", "10.0.0.0/8", False), ("10.1.2.3", "rubbish", False)])
def test_only_the_configured_proxies_may_name_the_browser(peer, proxies, trusted):
    assert is_trusted(peer, proxies) is trusted
