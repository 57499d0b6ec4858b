"""Both room stores, with the same tests: in this process, and in a real redis-server on 127.0.0.1."""

import itertools
import json
import threading
import time

import pytest

from transformer_viz.app.rooms.store import (
    CODE_ALPHABET,
    CODE_LENGTH,
    LINK_CODE_LENGTH,
    MAX_VIEW_CHARS,
    TEACHER_CODE_LENGTH,
    MemoryRoomStore,
    RedisRoomStore,
    RoomStoreError,
    normalize_code,
    open_store,
)

VIEW = {"layer": 1, "src_text": "香蕉 banana", "dims": [0, 3], "kind": "cross", "mask_value": float("-inf"),
        "cell_query": None, "norm_first": False}


OWNERS = (f"session-{n}" for n in itertools.count())


def made(store) -> str:
    """A new room's short code, made by a session of its own."""
    return store.create(next(OWNERS)).code


def as_if_redis_waited(client, seconds: float) -> None:
    """Every key's time to live shrinks by `seconds` (a key whose time is up is gone)."""
    for key in client.scan_iter():
        left = client.pttl(key)  # -1: a key that never expires (the index)
        if left > seconds * 1000:
            client.pexpire(key, left - int(seconds * 1000))
        elif left >= 0:
            client.delete(key)


@pytest.fixture(params=["memory", "redis"])
def aging_store(request, monkeypatch):
    """A new, empty store of each kind (idle: 100 s) and `later(seconds)`, which lets that much time pass for it (the
    wall clock, the memory store's clock, Redis's times to live)."""
    from transformer_viz.app.rooms import store as store_module

    now = [time.time()]
    monkeypatch.setattr(store_module.time, "time", lambda: now[0])
    client = None
    if request.param == "redis":
        import redis

        client = redis.Redis.from_url(request.getfixturevalue("redis_url"), decode_responses=True)
        client.flushdb()

    def later(seconds: float) -> None:
        now[0] += seconds
        if client is not None:
            as_if_redis_waited(client, seconds)

    store = MemoryRoomStore(idle=100, clock=lambda: now[0]) if client is None else RedisRoomStore(client, idle=100)
    yield store, later
    if client is not None:
        client.close()


def test_a_new_room_has_a_short_unambiguous_code_and_nothing_shared(make_store):
    store = make_store()
    code = made(store)
    assert len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET)
    assert not set(code) & set("0O1IL")
    room = store.get(code)
    assert (room.page, room.view, room.version) == ("", {}, 0)
    assert made(store) != code


def test_a_students_link_and_the_teachers_link_carry_keys_that_only_open_their_own_room(make_store):
    store = make_store()
    new, other = store.create("a teacher"), store.create("another teacher")
    assert len(new.link_code) == LINK_CODE_LENGTH and len(new.teacher_code) == TEACHER_CODE_LENGTH
    assert new.link_code.startswith(new.code) and new.teacher_code.startswith(new.code)
    assert set(new.link_code + new.teacher_code) <= set(CODE_ALPHABET)
    room = store.get(new.code)
    assert room.opens_for_student(new.link_code) and room.opens_for_teacher(new.teacher_code)
    assert not room.opens_for_student(new.code + other.link_code[CODE_LENGTH:])  # a guessed key
    assert not room.opens_for_teacher(new.link_code)  # a student's link does not make a teacher
    assert not room.opens_for_teacher(new.code + other.teacher_code[CODE_LENGTH:])
    assert new.teacher_code[CODE_LENGTH:] not in str(room)  # the store keeps a hash of the secret, not the secret


def test_the_teachers_link_in_another_session_takes_the_lead_and_the_old_session_moves_the_class_no_more(
        make_store):
    store = make_store()
    code = store.create("laptop").code
    assert store.get(code).leader == "laptop"  # the session that made it
    store.publish(code, "attention", VIEW, by="laptop")
    taken = store.lead(code, "projector")
    assert (taken.leader, taken.version, taken.view) == ("projector", 1, VIEW)
    stale = store.publish(code, "masks", {"pad": 9}, by="laptop")  # the laptop's tab, still open
    assert (stale.leader, stale.version) == ("projector", 1) and store.get(code) == taken
    assert store.heartbeat(code, by="laptop") == taken  # nor does its heartbeat keep the room alive
    assert store.publish(code, "masks", {"pad": 9}, by="projector").version == 2
    assert store.heartbeat(code, by="projector").teacher_seen >= taken.teacher_seen
    assert store.lead("ZZZZ", "projector") is None


def test_a_session_that_takes_the_lead_owns_the_room_and_the_one_that_led_it_no_longer_does(make_store):
    store = make_store()
    code = store.create("laptop").code
    projectors_own = store.create("projector").code
    store.lead(code, "projector")
    assert store.get(projectors_own) is None  # one room per session: it leads this one now
    laptops_next = store.create("laptop").code  # the laptop's old tab starts a room of its own
    assert store.get(code) is not None and store.get(laptops_next) is not None
    store.create("projector")
    assert store.get(code) is None


def test_a_flood_of_rooms_from_one_session_keeps_one_and_leaves_room_for_a_new_teacher(make_store):
    store = make_store(max_rooms=1000)
    codes = [store.create("a script").code for _ in range(1001)]
    # Each new room ended the previous one. A 4-character code may come again (31^4 codes), so an ended room's
    # code can be the last room's: no code but the last one opens a room.
    assert all(store.get(code) is None for code in set(codes) - {codes[-1]})
    assert store.get(codes[-1]) is not None
    assert store.get(store.create("a teacher").code) is not None


def test_a_store_keeps_a_bounded_number_of_rooms_and_frees_an_ended_ones_place(make_store):
    store = make_store(max_rooms=3)
    codes = [made(store) for _ in range(3)]
    with pytest.raises(RoomStoreError, match="3 rooms"):
        made(store)
    store.end(codes[1])
    assert store.get(made(store)) is not None


def test_a_heartbeat_says_the_teacher_is_here_without_a_new_version(make_store, monkeypatch):
    from transformer_viz.app.rooms import store as store_module

    store = make_store()
    code = made(store)
    store.publish(code, "attention", VIEW)
    before = store.get(code)
    later = before.teacher_seen + 5
    monkeypatch.setattr(store_module.time, "time", lambda: later)  # the heartbeat comes five seconds later
    after = store.heartbeat(code)
    assert (after.version, after.view, after.page) == (1, VIEW, "attention")
    assert after.teacher_seen > before.teacher_seen and store.get(code) == after
    store.end(code)
    assert store.heartbeat(code) is None and store.get(code) is None


@pytest.mark.parametrize("sign_of_life", ["heartbeat", "publish"])
def test_a_teacher_who_stays_past_the_idle_time_still_owns_the_room_so_a_new_room_of_theirs_ends_it(aging_store,
                                                                                                   sign_of_life):
    store, later = aging_store
    old = store.create("a teacher").code
    for _ in range(3):  # 180 s of a 100 s idle time, a sign of the teacher every 60 s
        later(60)
        said = store.heartbeat(old) if sign_of_life == "heartbeat" else store.publish(old, "attention", VIEW)
        assert said is not None
    store.create("a teacher")  # one room per owner, however long the first one lived
    assert store.get(old) is None


@pytest.mark.parametrize("sign_of_life", ["heartbeat", "publish"])
def test_a_room_kept_alive_past_the_idle_time_still_counts_against_the_cap(aging_store, sign_of_life, monkeypatch):
    """Issue 41, item 6: a sign of the teacher renews the room in the index of live rooms, which the cap counts."""
    store, later = aging_store
    monkeypatch.setattr(store, "_max_rooms", 1)
    alive = store.create("a teacher").code
    for _ in range(3):  # 180 s of a 100 s idle time, a sign of the teacher every 60 s
        later(60)
        assert (store.heartbeat(alive) if sign_of_life == "heartbeat" else store.publish(alive, "attention", VIEW))
    store.mark_joined(alive)
    with pytest.raises(RoomStoreError):  # the one room this store keeps is still live: no second one
        store.create("another teacher")


def test_each_publish_is_a_new_version_the_students_read(make_store):
    store = make_store()
    code = made(store)
    first = store.publish(code, "attention", VIEW)
    assert (first.page, first.view, first.version) == ("attention", VIEW, 1)
    assert store.get(code) == first
    second = store.publish(code, "masks", {"pad": 9})
    assert second.version == 2 and second.updated >= first.updated
    assert store.get(code).view == {"pad": 9}  # the view is replaced, not merged


def test_an_ended_or_unknown_room_is_not_brought_back_by_a_publish(make_store):
    store = make_store()
    code = made(store)
    store.end(code)
    assert store.get(code) is None
    assert store.publish(code, "attention", VIEW) is None
    assert store.get(code) is None
    assert store.get("ZZZZ") is None


def test_a_view_larger_than_a_link_is_refused(make_store):
    store = make_store()
    code = made(store)
    with pytest.raises(ValueError, match="more than a room shares"):
        store.publish(code, "attention", {"src_text": "x" * MAX_VIEW_CHARS})
    with pytest.raises(ValueError, match="not JSON"):
        store.publish(code, "attention", {"src_text": object()})
    assert store.get(code).version == 0


def test_a_room_in_memory_expires_after_its_idle_time_without_the_teacher():
    now = [0.0]
    store = MemoryRoomStore(idle=10, clock=lambda: now[0])
    code = made(store)
    now[0] = 6
    assert store.publish(code, "attention", VIEW).version == 1  # a change keeps it alive one idle time more
    now[0] = 12
    assert store.get(code) is not None  # students asking do not keep it alive
    assert store.heartbeat(code) is not None  # the teacher's session does
    now[0] = 21
    assert store.get(code) is not None
    now[0] = 23
    assert store.get(code) is None


def test_a_room_in_redis_lives_its_idle_time_from_its_last_change_then_expires(redis_url):
    import redis

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    store = RedisRoomStore(client, idle=3600)
    code = made(store)
    client.pexpire(store.key(code), 60_000)  # as if 59 minutes had passed without a change
    store.publish(code, "attention", VIEW)
    assert client.pttl(store.key(code)) > 3_000_000  # the change renewed its hour
    client.pexpire(store.key(code), 50)  # its last milliseconds
    deadline = time.monotonic() + 30  # a condition, waited for with a generous deadline: Redis expires in real time
    while store.get(code) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.get(code) is None
    client.close()


def test_concurrent_publishes_each_get_their_own_version(make_store):
    store = make_store()
    code = made(store)
    versions = []

    def publish_many():
        for i in range(25):
            versions.append(store.publish(code, "attention", {"layer": i}).version)

    threads = [threading.Thread(target=publish_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(versions) == list(range(1, 101))


def test_the_memory_store_forgets_idle_rooms_and_keeps_a_bounded_number():
    now = [0.0]
    store = MemoryRoomStore(idle=100, max_rooms=3, clock=lambda: now[0])
    codes = [made(store) for _ in range(3)]
    with pytest.raises(RoomStoreError, match="3 rooms"):
        made(store)
    now[0] = 50
    store.publish(codes[0], "attention", VIEW)  # active: lives until 150
    now[0] = 120  # the other two expired: room for two more
    assert store.get(codes[1]) is None
    made(store), made(store)
    with pytest.raises(RoomStoreError):
        made(store)
    assert store.get(codes[0]).version == 1


def test_the_memory_store_keeps_its_own_copy_of_the_view():
    store = MemoryRoomStore()
    code = made(store)
    view = {"dims": [2]}
    store.publish(code, "attention", view)
    view["dims"].append(3)
    assert store.get(code).view == {"dims": [2]}


def test_redis_keys_carry_the_rooms_idle_time(redis_url):
    import redis

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    store = RedisRoomStore(client, idle=600)
    code = made(store)
    assert 590 <= client.ttl(store.key(code)) <= 600
    client.expire(store.key(code), 5)
    store.publish(code, "attention", VIEW)  # activity renews the TTL
    assert client.ttl(store.key(code)) > 5
    client.expire(store.key(code), 5)
    store.heartbeat(code)  # so does the teacher's heartbeat
    assert client.ttl(store.key(code)) > 5
    assert json.loads(client.hget(store.key(code), "view")) == VIEW


def test_open_store_picks_redis_from_the_environment(redis_url):
    assert isinstance(open_store({}), MemoryRoomStore)
    store = open_store({"TVIZ_REDIS_URL": redis_url})
    assert isinstance(store, RedisRoomStore)
    code = made(store)
    assert store.get(code).version == 0


def test_an_unreachable_redis_is_a_room_store_error():
    from devtools.browser import free_port

    store = RedisRoomStore.from_url(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    with pytest.raises(RoomStoreError, match="Redis") as raised:
        store.get("K7QX")
    assert raised.value.reason == "unreachable" and raised.value.values == {}  # the screen says it without the address


@pytest.mark.parametrize("typed, code", [
    ("k7qx", "K7QX"), (" K7-QX ", "K7QX"), ("k7 qx", "K7QX"),
    ("K7Q", None), ("K7QXY", None), ("K0QX", None), ("KIQX", None), ("", None), (None, None), (["K7QX"], None),
    ("K7QX<script>", None),
])
def test_a_typed_code_is_read_leniently_and_checked_strictly(typed, code):
    assert normalize_code(typed) == code
