"""The Mem0 fact path beside the graph, end to end through the scripted TEST DOUBLE server."""

from __future__ import annotations

import threading
import time

import pytest

from mem0g.llm.client import LLMError
from mem0g.testing.script import turn

T1 = "2023-05-08T13:56:00"
T2 = "2023-09-01T10:00:00"
BOTH = {"memory": {"facts": True, "graph": True, "summary": False}}
FACTS_ONLY = {"memory": {"facts": True, "graph": False, "summary": False}}


def facts_rule(contains: str, facts: list[str]) -> dict:
    return {"task": "extract_facts", "match": {"messages": contains}, "response": {"facts": facts}}


def update_rule(contains: str, operations: list[dict]) -> dict:
    return {
        "task": "update_memory",
        "match": {"contains": contains},
        "times": 1,
        "response": {"operations": operations},
    }


LONDON = "Alice lives in London"
VEGGIE = "Alice is vegetarian"
NOOP_M1 = {"op": "NOOP", "new_index": 0, "existing_id": "m1"}


def update_m1(text: str) -> dict:
    return {"op": "UPDATE", "new_index": 0, "existing_id": "m1", "text": text}


def _seed(make_memory, *extra, config=FACTS_ONLY):
    m = make_memory(
        [facts_rule("I live in London and I am vegetarian", [LONDON, VEGGIE]), *extra], **config
    )
    first = m.add("I live in London and I am vegetarian", user_id="alice", timestamp=T1)
    return m, first


def test_add_then_noop_for_a_known_fact(make_memory, llm_server) -> None:
    m, first = _seed(make_memory, facts_rule("still veggie", ["Alice is vegetarian."]))
    assert [r.event for r in first.facts] == ["ADD", "ADD"]
    assert first.usage.calls == 1  # no similar facts yet: no update_memory call
    again = m.add("still veggie", user_id="alice", timestamp=T2)
    assert [(r.event, r.text) for r in again.facts] == [("NOOP", VEGGIE)]
    assert llm_server.calls("update_memory") == 0  # identical text needs no LLM


def test_one_answer_repeating_a_fact_adds_it_once(make_memory, llm_server) -> None:
    """Two facts of one answer that are the same fact by the normalised text that makes a
    stored one a NOOP ("Alice is vegetarian." again) were both added: a duplicate fact."""
    m = make_memory(
        [facts_rule("veggie", [VEGGIE, "alice is vegetarian.", "Alice  is vegetarian!"])],
        **FACTS_ONLY,
    )
    result = m.add("I am veggie", user_id="alice", timestamp=T1)
    assert [(r.event, r.text) for r in result.facts] == [("ADD", VEGGIE)]
    assert [f.text for f in m.get_all(user_id="alice").facts] == [VEGGIE]
    assert llm_server.calls("update_memory") == 0


@pytest.mark.parametrize(
    ("said", "corrected"),
    [
        ("Alice's blood type is A+", "Alice's blood type is A-"),
        ("Alice writes her games in C++", "Alice writes her games in C#"),
        ("Alice owes Bob $50", "Alice owes Bob £50"),
    ],
)
def test_a_fact_differing_only_in_symbols_is_not_a_known_fact(
    make_memory, llm_server, said, corrected
) -> None:
    """The normalisation that makes an extracted fact a NOOP without asking dropped every
    non-word character, so "A-" was "A+" and the correction was lost: only case, runs of
    spaces and sentence punctuation at the ends are ignored now."""
    m = make_memory(
        [facts_rule("first", [said]), facts_rule("second", [corrected + "."]),
         update_rule("Alice", [update_m1(corrected)])],
        **FACTS_ONLY,
    )  # fmt: skip
    fact_id = m.add("first", user_id="alice", timestamp=T1).facts[0].id
    result = m.add("second", user_id="alice", timestamp=T2)
    assert llm_server.calls("update_memory") == 1
    assert [(r.event, r.id, r.text) for r in result.facts] == [("UPDATE", fact_id, corrected)]
    assert [f.text for f in m.get_all(user_id="alice").facts] == [corrected]


def test_update_and_delete_keep_history(make_memory, llm_server) -> None:
    m, first = _seed(
        make_memory,
        facts_rule("moved to Paris", ["Alice moved to Paris in August 2023"]),
        update_rule(
            "moved to Paris",
            [
                {"op": "DELETE", "new_index": 0, "existing_id": "m1"},
                {"op": "ADD", "new_index": 0},
            ],
        ),
        facts_rule("vegan now", ["Alice is vegan"]),
        update_rule(
            "vegan",
            [{"op": "UPDATE", "new_index": 0, "existing_id": "m1", "text": "Alice is vegan"}],
        ),
    )
    london_id = next(r.id for r in first.facts if r.text == LONDON)
    veggie_id = next(r.id for r in first.facts if r.text == VEGGIE)
    moved = m.add("I moved to Paris last month", user_id="alice", timestamp=T2)
    sent = next(r for r in llm_server.requests if r.task == "update_memory").payload
    assert sent["existing"][0] == {
        "id": "m1",
        "text": LONDON,
        "created_at": sent["existing"][0]["created_at"],
    }
    assert {(r.event, r.text) for r in moved.facts} == {
        ("DELETE", LONDON),
        ("ADD", "Alice moved to Paris in August 2023"),
    }
    assert m.get(london_id, user_id="alice") is None
    assert [e.event for e in m.history(london_id, user_id="alice")] == ["ADD", "DELETE"]
    texts = {h.text for h in m.search("where does Alice live?", user_id="alice").facts}
    assert LONDON not in texts and "Alice moved to Paris in August 2023" in texts

    vegan = m.add("vegan now", user_id="alice", timestamp=T2)
    assert [(r.event, r.id, r.text, r.previous_text) for r in vegan.facts] == [
        ("UPDATE", veggie_id, "Alice is vegan", VEGGIE)
    ]
    history = m.history(veggie_id, user_id="alice")
    assert [(e.event, e.old_text, e.new_text) for e in history] == [
        ("ADD", None, VEGGIE),
        ("UPDATE", VEGGIE, "Alice is vegan"),
    ]
    assert m.get(veggie_id, user_id="alice").text == "Alice is vegan"


def test_an_update_dates_the_new_text_by_the_episode_that_said_it(make_memory) -> None:
    """An LLM UPDATE adds its episode to the fact's provenance: the context dates the new
    text by when it was said (September), no longer by the first text's May; the fact still
    exists from May (`said_at`), and an edit by hand adds no episode."""
    m, first = _seed(
        make_memory,
        facts_rule("vegan now", ["Alice is vegan"]),
        update_rule(
            "vegan",
            [{"op": "UPDATE", "new_index": 0, "existing_id": "m1", "text": "Alice is vegan"}],
        ),
    )
    veggie_id = next(r.id for r in first.facts if r.text == VEGGIE)
    vegan = m.add("vegan now", user_id="alice", timestamp=T2)
    assert [r.event for r in vegan.facts] == ["UPDATE"]
    fact = m.get(veggie_id, user_id="alice")
    episodes = [e.id for e in m.episodes(user_id="alice")]
    assert [p.episode_id for p in fact.provenance] == episodes  # the first add's, the update's
    assert (fact.said_at.month, fact.text_said_at.month) == (5, 9)
    assert "[2023-09-01] Alice is vegan" in m.context("what does Alice eat?", user_id="alice")
    hit = next(h for h in m.search("vegan", user_id="alice").facts if h.id == veggie_id)
    assert hit.text_said_at.month == 9 and hit.said_at.month == 5
    m.update(veggie_id, "Alice is vegan and likes tea", user_id="alice")  # by hand: no episode
    assert len(m.get(veggie_id, user_id="alice").provenance) == 2
    m.close()
    reopened = make_memory(**FACTS_ONLY)  # the same store: what was written, not what was held
    stored = reopened.get(veggie_id, user_id="alice")
    assert [p.episode_id for p in stored.provenance] == episodes


def test_an_add_listed_first_does_not_override_an_update_or_noop(make_memory) -> None:
    """An ADD of a new fact before the UPDATE (or NOOP) of the same fact stored it besides:
    "Alice is vegan" twice, the fact and the updated one. UPDATE and NOOP win in any order."""
    vegan = "Alice is vegan"
    m, first = _seed(
        make_memory,
        facts_rule("vegan now", [vegan]),
        update_rule("vegan", [{"op": "ADD", "new_index": 0}, update_m1(vegan)]),
        facts_rule("in London", ["Alice is in London"]),
        update_rule("in London", [{"op": "ADD", "new_index": 0}, NOOP_M1]),
    )
    veggie_id = next(r.id for r in first.facts if r.text == VEGGIE)
    london_id = next(r.id for r in first.facts if r.text == LONDON)
    result = m.add("vegan now", user_id="alice", timestamp=T2)
    assert [(r.event, r.id, r.text) for r in result.facts] == [("UPDATE", veggie_id, vegan)]
    result = m.add("in London", user_id="alice", timestamp=T2)
    assert [(r.event, r.id) for r in result.facts] == [("NOOP", london_id)]
    assert sorted(f.text for f in m.get_all(user_id="alice").facts) == [vegan, LONDON]


def test_an_update_to_the_same_text_is_a_noop(make_memory) -> None:
    """An UPDATE whose text is the fact's own (up to case and punctuation, the rule that makes
    an extracted fact a NOOP) wrote an UPDATE event that changed nothing and dated the text by
    this episode: now it is a NOOP, as the same text extracted would be."""
    m, first = _seed(
        make_memory,
        facts_rule("no meat", ["Alice eats no meat"]),
        update_rule("no meat", [update_m1("alice is Vegetarian.")]),
    )
    veggie_id = next(r.id for r in first.facts if r.text == VEGGIE)
    before = m.get(veggie_id, user_id="alice")
    result = m.add("no meat", user_id="alice", timestamp=T2)
    assert [(r.event, r.id, r.text) for r in result.facts] == [("NOOP", veggie_id, VEGGIE)]
    assert m.get(veggie_id, user_id="alice") == before
    assert [e.event for e in m.history(veggie_id, user_id="alice")] == ["ADD"]


def _id_of(payload: dict, text: str) -> str:
    return next(e["id"] for e in payload["existing"] if e["text"] == text)


def test_an_update_to_another_facts_text_deletes_the_fact(make_memory, llm_server) -> None:
    """An UPDATE merging a fact into the text another stored fact has left two facts with
    one text; the merged text is stored already, so the updated fact is deleted instead."""
    cheese, both = "Alice likes cheese pizza", "Alice loves cheese and chicken pizza"
    llm_server.add_rule(facts_rule("chicken", ["Alice loves chicken pizza"]))
    llm_server.add_rule(
        {
            "task": "update_memory",
            "response": lambda p: {
                "operations": [
                    {"op": "UPDATE", "new_index": 0, "existing_id": _id_of(p, cheese), "text": both}
                ]
            },
        }
    )
    m = make_memory(**FACTS_ONLY)
    stored = m.add([{"role": "user", "content": cheese}, {"role": "user", "content": both}],
                   user_id="alice", timestamp=T1, infer=False)  # fmt: skip
    cheese_id, both_id = (r.id for r in stored.facts)
    result = m.add("I love chicken pizza", user_id="alice", timestamp=T2)
    assert [(r.event, r.id, r.text) for r in result.facts] == [("DELETE", cheese_id, cheese)]
    assert [(f.id, f.text) for f in m.get_all(user_id="alice").facts] == [(both_id, both)]
    assert [e.event for e in m.history(cheese_id, user_id="alice")] == ["ADD", "DELETE"]


def test_each_fact_is_reported_once(make_memory, llm_server) -> None:
    """A fact an answer both NOOPs and deletes (or NOOPs twice, or that an extracted fact
    repeats while the answer deletes it) was reported more than once, as deleted and as
    still there: `add` reports one result per fact, its change if any."""
    m, first = _seed(make_memory, facts_rule("meat now", ["Alice eats meat now", VEGGIE]))
    veggie_id = next(r.id for r in first.facts if r.text == VEGGIE)

    def answer(payload: dict) -> dict:
        short = _id_of(payload, VEGGIE)
        return {"operations": [{"op": "NOOP", "existing_id": short},
                               {"op": "DELETE", "new_index": 0, "existing_id": short},
                               {"op": "NOOP", "existing_id": short}]}  # fmt: skip

    llm_server.add_rule({"task": "update_memory", "response": answer})
    result = m.add("meat now", user_id="alice", timestamp=T2)
    assert llm_server.calls("update_memory") == 1
    assert sorted((r.event, r.text) for r in result.facts) == [
        ("ADD", "Alice eats meat now"),
        ("DELETE", VEGGIE),
    ]
    assert m.get(veggie_id, user_id="alice") is None


def test_unknown_ids_are_ignored_and_the_fact_added(make_memory, caplog) -> None:
    m, _ = _seed(
        make_memory,
        facts_rule("Rome", ["Alice visited Rome"]),
        update_rule("Rome", [{"op": "DELETE", "new_index": 0, "existing_id": "m42"}]),
    )
    result = m.add("I went to Rome", user_id="alice", timestamp=T2)
    assert [(r.event, r.text) for r in result.facts] == [("ADD", "Alice visited Rome")]
    assert len(m.get_all(user_id="alice").facts) == 3
    assert "unknown index or id" in caplog.text


def test_direct_update_delete_and_history(make_memory) -> None:
    m, first = _seed(make_memory)
    fact_id = first.facts[0].id
    m.update(fact_id, "Alice lives in Camden, London", user_id="alice")
    assert m.get(fact_id, user_id="alice").text == "Alice lives in Camden, London"
    m.delete(fact_id, user_id="alice")
    assert m.get(fact_id, user_id="alice") is None
    events = m.history(fact_id, user_id="alice")
    assert [(e.event, e.actor) for e in events] == [("ADD", "llm"), ("UPDATE", "user"),
                                                    ("DELETE", "user")]  # fmt: skip
    with pytest.raises(KeyError):
        m.delete(fact_id, user_id="alice")
    with pytest.raises(KeyError):  # another tenant cannot touch it
        m.update(first.facts[1].id, "x", user_id="mallory")


def test_infer_false_makes_no_llm_call(make_memory, llm_server) -> None:
    m = make_memory(**FACTS_ONLY)
    result = m.add(
        [{"role": "user", "content": "Remember: my locker code is 4521"},
         {"role": "assistant", "content": "Noted."}],
        user_id="alice", infer=False,
    )  # fmt: skip
    assert llm_server.requests == []
    assert [r.text for r in result.facts] == ["Remember: my locker code is 4521", "Noted."]
    hits = m.search("locker code", user_id="alice").facts
    assert hits[0].text == "Remember: my locker code is 4521"


def test_tenant_isolation_for_facts(make_memory) -> None:
    m = make_memory(**FACTS_ONLY)
    a = m.add("Alice's secret is 42", user_id="alice", infer=False)
    m.add("Bob's secret is 7", user_id="bob", infer=False)
    assert [h.text for h in m.search("secret", user_id="bob").facts] == ["Bob's secret is 7"]
    assert m.get(a.facts[0].id, user_id="bob") is None
    assert m.history(a.facts[0].id, user_id="bob") == []
    m.delete_all(user_id="bob")
    assert m.search("secret", user_id="bob").facts == []
    assert len(m.search("secret", user_id="alice").facts) == 1


def test_both_paths_run_in_one_add_within_budget(make_memory, llm_server) -> None:
    rules = turn("I live in London", [("Alice", "person"), ("London", "city")],
                 [("Alice", "lives_in", "London")])  # fmt: skip
    rules.append(facts_rule("I live in London", [LONDON]))
    m = make_memory(rules, **BOTH)
    result = m.add("I live in London", user_id="alice", timestamp=T1)
    assert [r.event.value for r in result.relations] == ["ADD"]
    assert [r.event for r in result.facts] == ["ADD"]
    assert result.usage.by_task == {
        "extract_entities": 1,
        "establish_relations": 1,
        "extract_facts": 1,
    }
    hits = m.search("where does Alice live?", user_id="alice")
    assert hits.facts[0].text == LONDON and hits.relations[0].destination == "London"


def test_the_paths_run_concurrently(make_memory, llm_server) -> None:
    inside = 0
    overlap = threading.Event()
    lock = threading.Lock()

    def slow(answer):
        def respond(payload):
            nonlocal inside
            with lock:
                inside += 1
                if inside > 1:
                    overlap.set()
            time.sleep(0.3)
            with lock:
                inside -= 1
            return answer

        return respond

    llm_server.add_rule({"task": "extract_entities", "response": slow({"entities": []})})
    llm_server.add_rule({"task": "extract_facts", "response": slow({"facts": []})})
    m = make_memory(**BOTH)
    m.add("hello", user_id="alice")
    assert overlap.is_set()


@pytest.mark.parametrize("failing", ["extract_facts", "update_memory", "establish_relations"])
def test_combined_add_is_atomic_when_either_path_fails(make_memory, llm_server, failing) -> None:
    rules = turn("I live in London", [("Alice", "person"), ("London", "city")],
                 [("Alice", "lives_in", "London")])  # fmt: skip
    rules.append(facts_rule("I live in London", [LONDON]))
    rules += turn("moved to Paris", [("Alice", "person"), ("Paris", "city")],
                  [("Alice", "lives_in", "Paris")], [("INVALIDATE", 0, "e1")])  # fmt: skip
    rules.append(facts_rule("moved to Paris", ["Alice lives in Paris"]))
    rules.append(update_rule("Paris", [{"op": "DELETE", "new_index": 0, "existing_id": "m1"}]))
    rules.insert(0, {"task": failing, "match": {"contains": "Paris"},
                     "response": {"status": 500, "error": "boom"}})  # fmt: skip
    m = make_memory(rules, **BOTH)
    m.add("I live in London", user_id="alice", timestamp=T1)
    before = m.get_all(user_id="alice", include_invalid=True)
    with pytest.raises(LLMError):
        m.add("I moved to Paris", user_id="alice", timestamp=T2)
    assert m.get_all(user_id="alice", include_invalid=True) == before
    assert m.stats().episodes == 1


def test_recent_window_holds_exactly_m_messages(make_memory, llm_server) -> None:
    llm_server.add_rule({"task": "extract_facts", "response": {"facts": []}})
    m = make_memory(memory={"facts": True, "graph": False, "summary": False,
                            "recent_messages": 3})  # fmt: skip
    for i in range(5):
        m.add([{"role": "user", "content": f"message {i}"}], user_id="alice", run_id="r1")
    m.add("other run", user_id="alice", run_id="r2")
    payloads = [r.payload for r in llm_server.requests if r.task == "extract_facts"]
    recent = [msg["content"] for msg in payloads[4]["context"]["recent"]]
    assert recent == ["message 1", "message 2", "message 3"]
    assert payloads[0]["context"]["recent"] == []
    assert payloads[5]["context"]["recent"] == []  # run r2 has its own window


def test_summary_refreshes_in_background_and_feeds_extraction(make_memory, llm_server) -> None:
    release = threading.Event()

    def summarize(payload):
        release.wait(10)
        return {"summary": f"Alice chatted ({len(payload['messages'])} messages)."}

    llm_server.add_rule({"task": "summarize", "response": summarize})
    llm_server.add_rule({"task": "extract_facts", "response": {"facts": []}})
    m = make_memory(memory={"facts": True, "graph": False, "summary": True,
                            "summary_every": 2})  # fmt: skip
    m.add("one", user_id="alice")
    assert llm_server.calls("summarize") == 0
    started = time.perf_counter()
    m.add("two", user_id="alice")  # due now: queued, must not block this add
    assert time.perf_counter() - started < 5
    assert m.summary(user_id="alice") is None  # still running (held by `release`)
    release.set()
    deadline = time.time() + 10
    while m.summary(user_id="alice") is None and time.time() < deadline:
        time.sleep(0.05)
    assert m.summary(user_id="alice").text == "Alice chatted (2 messages)."
    m.add("three", user_id="alice")
    last = [r.payload for r in llm_server.requests if r.task == "extract_facts"][-1]
    assert last["context"]["summary"] == "Alice chatted (2 messages)."


def test_an_import_calls_no_llm_not_even_for_the_summary(make_memory, llm_server) -> None:
    """`infer=False` promises no LLM call: a due summary refresh waits for the next add that
    infers (or `refresh_summary`), which then covers the imported messages too."""
    llm_server.add_rule({"task": "summarize", "response": lambda p: {
        "summary": f"{len(p['messages'])} messages"}})  # fmt: skip
    llm_server.add_rule({"task": "extract_facts", "response": {"facts": []}})
    m = make_memory(memory={"facts": True, "graph": False, "summary": True,
                            "summary_every": 2})  # fmt: skip
    for text in ("one", "two", "three"):
        m.add(text, user_id="alice", infer=False)
    m.close()  # waits for any refresh in flight: none may have been queued
    assert llm_server.requests == []
    m = make_memory(memory={"facts": True, "graph": False, "summary": True,
                            "summary_every": 2})  # fmt: skip
    assert m.summary(user_id="alice") is None
    m.add("four", user_id="alice")
    deadline = time.time() + 10
    while m.summary(user_id="alice") is None and time.time() < deadline:
        time.sleep(0.05)
    assert m.summary(user_id="alice").text == "4 messages"
    assert llm_server.calls("summarize") == 1


def test_close_waits_for_a_refresh_in_flight(make_memory, llm_server) -> None:
    def summarize(payload):
        time.sleep(0.5)
        return {"summary": "done"}

    llm_server.add_rule({"task": "summarize", "response": summarize})
    m = make_memory(**FACTS_ONLY)
    m.add("one", user_id="alice", infer=False)
    m.refresh_summary(user_id="alice", wait=False)
    m.close()
    assert llm_server.calls("summarize") == 1
    store = type(m.store)(m.store.path) if hasattr(m.store, "path") else None
    if store is not None:  # the refresh finished and was written before close returned
        from mem0g.types import Tenant

        assert store.get_summary(Tenant(user_id="alice")).text == "done"
        store.close()


def test_context_block_is_deterministic_and_within_budget(make_memory) -> None:
    m = make_memory(**FACTS_ONLY)
    m.add([{"role": "user", "content": f"Alice fact number {i} about hiking and trains"}
           for i in range(30)], user_id="alice", timestamp=T1, infer=False)  # fmt: skip
    block = m.context("what does Alice like?", user_id="alice", limit=30, max_tokens=120)
    assert block == m.context("what does Alice like?", user_id="alice", limit=30, max_tokens=120)
    assert block.startswith("Memories for user alice:\n- [2023-05-08] Alice fact number")
    assert "Relations for user alice:" in block
    assert (len(block) + 3) // 4 <= 120
    big = m.context("what does Alice like?", user_id="alice", limit=30, max_tokens=5000)
    assert big.count("\n- [2023-05-08]") == 30


def test_delete_all_waits_for_a_summary_refresh(make_memory, llm_server) -> None:
    def summarize(payload):
        time.sleep(0.5)
        return {"summary": "Alice said things."}

    llm_server.add_rule({"task": "summarize", "response": summarize})
    m = make_memory(**FACTS_ONLY)
    m.add("one", user_id="alice", infer=False)
    m.refresh_summary(user_id="alice", wait=False)
    m.delete_all(user_id="alice")
    time.sleep(0.7)
    assert m.summary(user_id="alice") is None
    assert all(t.user_id != "alice" for t in m.tenants())


def test_stats_takes_the_fact_count_from_the_store(make_memory, monkeypatch) -> None:
    """`Memory.stats` reads no fact: it used to read every fact of every tenant for a number
    (O(all facts) for `mem0g stats` and /v1/stats at 20k tenants); the store counts them."""
    m = make_memory(**FACTS_ONLY)
    two = [{"role": "user", "content": c} for c in ("one", "two")]
    m.add(two, user_id="alice", timestamp=T1, infer=False)
    m.add("three", user_id="alice", agent_id="bot", timestamp=T1, infer=False)
    m.add("four", user_id="bob", timestamp=T1, infer=False)
    read = {ids: len(m.get_all(**dict(ids)).facts) for ids in (
        (("user_id", "alice"),), (("user_id", "alice"), ("agent_id", "bot")),
        (("user_id", "bob"),))}  # fmt: skip
    assert list(read.values()) == [3, 1, 1]

    def no_reads(*args, **kwargs):
        raise AssertionError("Memory.stats read the facts to count them")

    monkeypatch.setattr(m.store, "facts", no_reads)
    assert m.stats().facts == 4
    assert {ids: m.stats(**dict(ids)).facts for ids in read} == read
    assert m.stats().warmup is None  # no warm-up running (tests switch it off)
