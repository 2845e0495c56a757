"""Strict input checks (issue #14, item 3): a wrong type is a TypeError, a bad value a
ValueError with a clear message, raised before any LLM call, the same on both stores; nothing
is silently reinterpreted. The LLM is the scripted TEST DOUBLE server."""

from __future__ import annotations

import json
import threading
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from mem0g import validation
from mem0g.testing.script import turn
from mem0g.types import to_utc

T1 = "2023-05-08T13:56:00"
LONDON = turn(
    "I live in London", [("Alice", "person"), ("London", "city")], [("Alice", "lives_in", "London")]
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2023-05-08", datetime(2023, 5, 8, tzinfo=UTC)),
        ("2023-05-08T10:00:00Z", datetime(2023, 5, 8, 10, tzinfo=UTC)),
        ("2023-05-08T10:00:00+02:00", datetime(2023, 5, 8, 8, tzinfo=UTC)),
        (" 2023-05-08 10:00 ", datetime(2023, 5, 8, 10, tzinfo=UTC)),
        (date(2023, 5, 8), datetime(2023, 5, 8, tzinfo=UTC)),
        (datetime(2023, 5, 8, 12, tzinfo=timezone(timedelta(hours=-3))),
         datetime(2023, 5, 8, 15, tzinfo=UTC)),
        (None, None),
        ("", None),
    ],
)  # fmt: skip
def test_to_utc_reads_whole_dates_and_times(value, expected) -> None:
    assert to_utc(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "2023-05-08T25:00:00",  # no hour 25 (was read as midnight)
        "2023-05-08T10:00:00+25:00",  # no such offset (was dropped)
        "2023-05-08garbage",  # trailing text (was accepted)
        "08/05/2023",
        "tomorrow",
        "0001-01-01T00:00:00+05:00",  # before year 1 in UTC
        "9999-12-31T23:00:00-05:00",  # after year 9999 in UTC
    ],
)
def test_to_utc_refuses_anything_else_with_value_error(value) -> None:
    with pytest.raises(ValueError, match=r"ISO-8601|outside the years"):
        to_utc(value)


@pytest.mark.parametrize("value", [1_683_554_160, 1_683_554_160.5, True, [2023, 5, 8]])
def test_epoch_numbers_and_other_types_are_type_errors(value) -> None:
    with pytest.raises(TypeError, match="fromtimestamp"):
        to_utc(value)


def test_wrong_types_are_type_errors_before_any_call(make_memory, llm_server) -> None:
    m = make_memory()
    with pytest.raises(TypeError, match="query must be a string, not int"):
        m.search(123, user_id="alice")
    with pytest.raises(TypeError, match="text must be a string, not int"):
        m.update("some-id", 5, user_id="alice")
    with pytest.raises(TypeError, match="fact_id must be a string, not int"):
        m.delete(5, user_id="alice")
    with pytest.raises(TypeError, match="user_id must be a string, not int"):
        m.add("I live in London", user_id=7)
    with pytest.raises(TypeError, match=r"messages must be a string.*not int"):
        m.add(5, user_id="alice")
    with pytest.raises(TypeError, match="limit must be an int"):
        m.search("London", user_id="alice", limit="3")
    with pytest.raises(TypeError, match="epoch"):
        m.add("I live in London", user_id="alice", timestamp=1_683_554_160)
    with pytest.raises(TypeError, match="epoch"):
        m.add([{"role": "user", "content": "hi", "timestamp": 1_683_554_160}], user_id="alice")
    with pytest.raises(ValueError, match="ISO-8601"):
        m.add("I live in London", user_id="alice", timestamp="2023-05-08T25:00:00")
    with pytest.raises(ValueError, match="ISO-8601"):
        m.search("London", user_id="alice", as_of="2023-05-08garbage")
    assert llm_server.requests == []


def test_every_read_by_id_checks_its_id_as_the_writes_do(make_memory) -> None:
    """update and delete refused a blank or non-string id; get, history, get_entity,
    entity_relations, entity_history, merge and split passed it to the store (None back
    for 5, or a driver error on Neo4j): a caller's bug answered as "not found"."""
    m = make_memory()
    m.add("Alice lives in Paris", user_id="alice", infer=False)
    reads = {
        "fact_id": [m.get, m.history],
        "entity_id": [m.get_entity, m.entity_relations, m.entity_history],
    }
    for name, calls in reads.items():
        for call in calls:
            with pytest.raises(TypeError, match=f"{name} must be a string, not int"):
                call(5, user_id="alice")
            with pytest.raises(ValueError, match=f"{name} is empty"):
                call(" ", user_id="alice")
    with pytest.raises(ValueError, match="other_id is empty"):
        m.merge_entities("x", "", user_id="alice")
    with pytest.raises(TypeError, match="merge_id must be a string"):
        m.split_entity(5, user_id="alice")
    assert m.get("no-such-id", user_id="alice") is None  # a well-formed unknown id: None


def test_a_bad_time_is_named_by_its_argument(make_memory, llm_server) -> None:
    """The error "not an ISO-8601 date or time: 'May 8'" did not say which of a call's times it was
    (a search takes as_of and reference_time, an add its timestamp and each message's)."""
    m = make_memory()
    with pytest.raises(ValueError, match=r"^reference_time: not an ISO-8601 .*'May 8'"):
        m.search("London", user_id="alice", as_of="2023-05-08", reference_time="May 8")
    with pytest.raises(ValueError, match=r"^as_of: not an ISO-8601"):
        m.get_all(user_id="alice", as_of="May 8")
    with pytest.raises(TypeError, match=r"^timestamp: .*epoch"):
        m.add("I live in London", user_id="alice", timestamp=1_683_554_160)
    with pytest.raises(ValueError, match=r"^as_of: "):
        m.context("London", user_id="alice", as_of="yesterday")
    assert llm_server.requests == []


def test_lengths_are_bounded_before_any_call(make_memory, llm_server) -> None:
    m = make_memory(LONDON)
    m.add("I live in London", user_id="alice", timestamp=T1)
    before = m.stats()
    llm_server.reset_requests()
    with pytest.raises(ValueError, match="content is 1000000 characters long; at most 32000"):
        m.add("x" * 1_000_000, user_id="alice")
    with pytest.raises(ValueError, match="user_id is 300 characters long; at most 256"):
        m.add("I live in London", user_id="u" * 300)
    with pytest.raises(ValueError, match="query is 5000 characters long"):
        m.search("q" * 5000, user_id="alice")
    with pytest.raises(ValueError, match="at most 2000"):
        m.add("f" * 2001, user_id="alice", infer=False)  # each message becomes a fact
    with pytest.raises(ValueError, match="name is 300 characters long"):
        m.add([{"role": "user", "content": "hi", "name": "N" * 300}], user_id="alice")
    assert llm_server.requests == []
    assert m.stats() == before


def test_a_search_limit_is_from_1_to_max_limit_on_both_stores(make_memory) -> None:
    """A `limit` past `validation.MAX_LIMIT` is a ValueError on both stores. Neo4j takes 3 x
    limit (the pool a time window re-ranks) as a 32-bit list bound: a search with a time in
    its query failed there with a StoreError from limit 715,827,883 while the embedded store
    answered, and from 2**63 both stores failed with an OverflowError."""
    m = make_memory(memory={"facts": True})
    m.add("Alice went hiking in May 2023", user_id="alice", infer=False)
    for query in ("hiking", "hiking in May 2023"):
        found = m.search(query, user_id="alice", limit=validation.MAX_LIMIT)
        assert [f.text for f in found.facts] == ["Alice went hiking in May 2023"]
        for limit in (0, -1):
            with pytest.raises(ValueError, match="limit must be at least 1"):
                m.search(query, user_id="alice", limit=limit)
        for limit in (validation.MAX_LIMIT + 1, 10**9, 2**63):
            with pytest.raises(ValueError, match=f"limit must be at most {validation.MAX_LIMIT}"):
                m.search(query, user_id="alice", limit=limit)
            with pytest.raises(ValueError, match="limit must be at most"):
                m.context(query, user_id="alice", limit=limit)


def test_a_context_budget_is_an_int_of_at_least_1(make_memory) -> None:
    """`max_tokens` is checked as `limit` is, before the search (REST takes a strict int): a
    float ran the search and then failed in pydantic, True was a budget of 1, and a string
    or None failed with Python's comparison error."""
    m = make_memory(memory={"facts": True})
    m.add("Alice went hiking", user_id="alice", infer=False)
    for wrong in (2.5, True, "100", None):
        with pytest.raises(TypeError, match="max_tokens must be an int"):
            m.context("hiking", user_id="alice", max_tokens=wrong)
    for bad in (0, -5):
        with pytest.raises(ValueError, match="max_tokens must be at least 1"):
            m.context_block("hiking", user_id="alice", max_tokens=bad)
    assert "Alice went hiking" in m.context("hiking", user_id="alice", max_tokens=100)


def test_lone_surrogates_are_refused_before_any_call(make_memory, llm_server) -> None:
    """A str holding "\ud800" (JSON allows it) cannot be encoded for a store or a model: a
    clear ValueError, nothing written, no LLM call (it was a UnicodeEncodeError mid-add)."""
    m = make_memory(LONDON)
    m.add("I live in London", user_id="alice", timestamp=T1)
    before = m.stats()
    llm_server.reset_requests()
    bad = "bad \ud800 text"
    with pytest.raises(ValueError, match="content is not valid Unicode: a lone surrogate at "
                       "character 4"):  # fmt: skip
        m.add(bad, user_id="alice")
    with pytest.raises(ValueError, match="not valid Unicode"):
        m.add(bad, user_id="alice", infer=False)
    with pytest.raises(ValueError, match="user_id is not valid Unicode"):
        m.add("I live in London", user_id=bad)
    with pytest.raises(ValueError, match="query is not valid Unicode"):
        m.search(bad, user_id="alice")
    with pytest.raises(ValueError, match="name is not valid Unicode"):
        m.add([{"role": "user", "content": "hi", "name": bad}], user_id="alice")
    assert llm_server.requests == []
    assert m.stats() == before


def test_limits_are_configurable(make_memory, llm_server) -> None:
    m = make_memory(LONDON, limits={"max_query_chars": 8, "max_name_chars": 6, "max_names": 1})
    with pytest.raises(ValueError, match="at most 8"):
        m.search("London is big", user_id="alice")
    assert m.search("London", user_id="alice").relations == []
    with pytest.raises(Exception, match="no valid answer"):  # both names fit, two names do not
        m.add("I live in London", user_id="alice", timestamp=T1)
    rejected = [r for r in llm_server.requests if r.task == "extract_entities"][1]
    assert "at most 1 are allowed" in rejected.body["messages"][0]["content"]
    assert m.stats().entities == 0


def test_a_delete_across_users_must_be_confirmed(make_memory) -> None:
    m = make_memory(LONDON)
    for user in ("alice", "bob"):
        m.add("I live in London", user_id=user, agent_id="helper", timestamp=T1)
    with pytest.raises(ValueError, match="for every user; pass all_users=True"):
        m.delete_all(agent_id="helper")
    assert len(m.tenants()) == 2
    assert m.delete_all(user_id="bob", agent_id="helper") > 0  # one user's: no confirmation
    assert [t.user_id for t in m.tenants()] == ["alice"]
    assert m.delete_all(agent_id="helper", all_users=True) > 0
    assert m.tenants() == []


def test_per_tenant_maps_are_trimmed(make_memory) -> None:
    summarize = {"task": "summarize", "response": {"summary": "Lives in London."}}
    m = make_memory([*LONDON, summarize], memory={"summary": True, "summary_every": 1})
    for i in range(5):
        m.add("I live in London", user_id=f"user-{i}", timestamp=T1)
    m.summaries.wait_idle()
    assert m.summary(user_id="user-4").text == "Lives in London."
    assert len(m._tenant_locks) == 0
    assert m.summaries.pending() == 0
    m.delete_all(user_id="user-0")
    assert m.summaries.pending() == 0


def test_no_refresh_is_counted_once_wait_idle_returns(
    tmp_path, llm_server, hashing, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Future wakes its waiters before it runs its done callbacks (CPython's
    `Future.set_result`); here the callbacks are held back until after `wait_idle` returns,
    as a busy machine may do, so the map must be trimmed by `wait_idle` itself."""
    from concurrent.futures import Future

    from mem0g import Memory

    gate = threading.Event()
    invoke = Future._invoke_callbacks  # type: ignore[attr-defined]

    def late(self: Future[object]) -> None:
        gate.wait(10)
        invoke(self)

    llm_server.add_rule({"task": "summarize", "response": {"summary": "Lives in London."}})
    config = {
        "llm": {"base_url": llm_server.base_url, "api_key": "test", "max_retries": 0},
        "graph_store": {"provider": "embedded", "path": str(tmp_path / "s")},
        "memory": {"summary": True, "summary_every": 1},
    }
    with Memory(config, embedder=hashing) as m:
        m.add("I live in London", user_id="alice", infer=False)
        m.summaries.wait_idle()
        monkeypatch.setattr(Future, "_invoke_callbacks", late)
        try:
            m.refresh_summary(user_id="alice", wait=False)
            m.summaries.wait_idle()
            assert m.summaries.pending() == 0
        finally:
            gate.set()
        assert m.summary(user_id="alice").text == "Lives in London."


@pytest.mark.parametrize(
    "ids",
    [("alice", None, None), (None, "agent 7", "run-1"), ('quo"te', None, "back\\slash"),
     ("é", "\n", None), ("tab\there", None, None), ("", None, "x")],
)  # fmt: skip
def test_tenant_key_is_the_stored_json_whatever_the_ids(ids) -> None:
    from mem0g.types import Tenant

    tenant = Tenant(user_id=ids[0], agent_id=ids[1], run_id=ids[2])
    assert tenant.key == json.dumps(list(ids))  # the key both stores hold
    assert Tenant.from_key(tenant.key) == tenant


def _astral(n: int, start: int = 0) -> str:
    """n different CJK letters outside the BMP: 4 bytes each in UTF-8, 12 as JSON escapes."""
    return "".join(chr(0x20000 + start + i) for i in range(n))


def _upper(field: str) -> int:
    """The largest value `limits.<field>` can be configured to."""
    from mem0g.config import LimitsConfig

    return next(m.le for m in LimitsConfig.model_fields[field].metadata if hasattr(m, "le"))


def test_the_longest_values_the_limits_allow_are_stored(make_memory, llm_server, hashing) -> None:
    """Names, relations, types and ids at the largest lengths the limits can be set to, in
    the characters that take the most bytes, are stored on both stores (Neo4j's index keys
    stop near 8 KB: a value past them failed the add after all its LLM calls)."""
    ids, name, rel = _upper("max_id_chars"), _upper("max_name_chars"), _upper("max_relation_chars")
    alice, berlin = _astral(name), _astral(name, 1000)
    relation, kind = ("lives_in_" * rel)[:rel], ("person_" * rel)[:rel]
    fact = _astral(2000, 3000)
    m = make_memory(
        turn("moved", [(alice, kind), (berlin, kind)], [(alice, relation, berlin)], facts=[fact]),
        embedder=hashing,  # (MiniLM reads these letters as one unknown token: one vector)
        limits={"max_id_chars": ids, "max_name_chars": name, "max_relation_chars": rel},
        memory={"facts": True},
    )
    # three ids of 256 such letters make a 9,228-character key (JSON escapes): refused before
    # any call, as Neo4j's index would refuse it after all of them
    tenant = {
        "user_id": _astral(ids),
        "agent_id": _astral(ids, ids),
        "run_id": _astral(ids, 2 * ids),
    }
    with pytest.raises(ValueError, match=r"tenant key of 9228 characters.*at most 5000"):
        m.add("I moved", **tenant, timestamp=T1)
    assert llm_server.requests == []
    from mem0g.types import Tenant
    from mem0g.validation import MAX_TENANT_KEY_CHARS

    tenant["agent_id"] = _astral(150, ids)
    shorter = Tenant(**{**tenant, "run_id": ""}).key
    tenant["run_id"] = "r" * (MAX_TENANT_KEY_CHARS - len(shorter))  # the longest key taken
    assert len(Tenant(**tenant).key) == MAX_TENANT_KEY_CHARS
    m.add("I moved", **tenant, timestamp=T1)
    graph = m.get_all(**tenant)
    assert {e.name for e in graph.entities} == {alice, berlin}
    assert [(r.source, r.relation, r.destination) for r in graph.relations] == [
        (alice, relation, berlin)
    ]
    assert [f.text for f in graph.facts] == [fact]
    assert [r.destination for r in m.search(alice, **tenant).relations] == [berlin]


def test_a_whole_store_dump_reads_tenants_that_lowered_limits_refuse(
    make_memory, llm_server, tmp_path
) -> None:
    """`get_everything` (`mem0g dump` without a tenant, the service's admin reads) asked each
    stored tenant through `get_all`, which checks ids against today's limits: an operator who
    lowered `limits.max_id_chars` could no longer dump the store at all."""
    m = make_memory(path=tmp_path / "s")
    m.add("Alice lives in Paris", user_id="a" * 40, infer=False)
    m.add("Bob likes jazz", user_id="bob", infer=False)
    m.close()
    lowered = make_memory(path=tmp_path / "s", limits={"max_id_chars": 10})
    with pytest.raises(ValueError, match="user_id"):
        lowered.get_all(user_id="a" * 40)  # asking for it is still refused
    everything = lowered.get_everything()
    assert sorted(f.text for f in everything.facts) == ["Alice lives in Paris", "Bob likes jazz"]


def test_a_closed_memory_says_it_is_closed(make_memory) -> None:
    """A call after `close()` raised the thread pool's "cannot schedule new futures after
    shutdown" (or a driver error on Neo4j); it is one StoreError saying what happened."""
    from mem0g.stores.base import StoreError

    m = make_memory()
    m.add("Alice lives in Paris", user_id="alice", infer=False)
    m.close()
    m.close()  # idempotent
    for call in (
        lambda: m.search("Paris", user_id="alice"),
        lambda: m.add("Bob likes jazz", user_id="alice", infer=False),
        lambda: m.get_all(user_id="alice"),
        lambda: m.context("Paris", user_id="alice"),
    ):
        with pytest.raises(StoreError, match="this Memory is closed"):
            call()
