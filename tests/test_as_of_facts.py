"""`as_of` is a hard filter for facts as for edges (issue #15, item 3): a fact exists from when
it was said until it was updated or deleted, and an updated fact reads as it did then; in
`search`, `context` and `get_all`, on both stores. `retrieve/timeline.py` is the clock."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mem0g import Memory
from mem0g.embed import CachedEmbedder
from mem0g.retrieve.timeline import FactVersion, as_of, versions
from mem0g.types import Episode, Fact, FactEvent, Message, Provenance, Tenant, WritePlan
from tests.conftest import MemoryFactory

UTC = timezone.utc
MAY = datetime(2023, 5, 8, tzinfo=UTC)
JUNE = datetime(2023, 6, 20, tzinfo=UTC)
A = Tenant(user_id="alice")


def test_versions_follow_said_times_updates_and_deletes() -> None:
    said = Provenance(episode_id="e1", timestamp=MAY)
    fact = Fact(tenant=A, text="Alice lives in Berlin", provenance=[said],
                created_at=JUNE + timedelta(days=900))  # fmt: skip
    gone = "gone-fact"
    timeline = [
        (FactEvent(fact_id=fact.id, tenant=A, event="ADD", new_text="Alice lives in Paris",
                   episode_id="e1", at=JUNE + timedelta(days=900)), MAY),
        (FactEvent(fact_id=fact.id, tenant=A, event="UPDATE", old_text="Alice lives in Paris",
                   new_text="Alice lives in Berlin", episode_id="e2",
                   at=JUNE + timedelta(days=901)), JUNE),
        (FactEvent(fact_id=gone, tenant=A, event="ADD", new_text="Alice has a cat",
                   episode_id="e1", at=JUNE + timedelta(days=900)), MAY),
        (FactEvent(fact_id=gone, tenant=A, event="DELETE", old_text="Alice has a cat",
                   actor="user", at=JUNE + timedelta(days=1)), None),
    ]  # fmt: skip
    found = versions([fact], timeline)

    def texts(when: datetime) -> list[str]:
        return sorted(v.text for v in as_of(found, when))

    assert texts(MAY - timedelta(days=1)) == []  # nothing was said yet
    assert texts(MAY) == ["Alice has a cat", "Alice lives in Paris"]
    assert texts(JUNE - timedelta(seconds=1)) == ["Alice has a cat", "Alice lives in Paris"]
    assert texts(JUNE) == ["Alice has a cat", "Alice lives in Berlin"]
    assert texts(JUNE + timedelta(days=2)) == ["Alice lives in Berlin"]  # the cat was deleted
    current = [v for v in found if v.fact is not None]
    assert current == [
        FactVersion(fact_id=fact.id, tenant=A, text=fact.text, start=JUNE, fact=fact)
    ]


def test_a_backdated_change_never_ends_a_text_before_it_began() -> None:
    fact = Fact(tenant=A, text="new", provenance=[Provenance(episode_id="e", timestamp=JUNE)])
    timeline = [
        (FactEvent(fact_id=fact.id, tenant=A, event="ADD", new_text="old", episode_id="e"), JUNE),
        (FactEvent(fact_id=fact.id, tenant=A, event="UPDATE", old_text="old", new_text="new",
                   episode_id="x"), MAY),
    ]  # fmt: skip
    found = versions([fact], timeline)
    assert [v.text for v in as_of(found, JUNE)] == ["new"]
    assert as_of(found, MAY) == []


@pytest.mark.model
def test_search_context_and_get_all_filter_facts_by_as_of(make_memory: MemoryFactory) -> None:
    m = make_memory(memory={"facts": True})
    m.add("Alice lives in Paris", user_id="alice", timestamp=MAY, infer=False)
    m.add("Alice adopted a dog named Rex", user_id="alice", timestamp=JUNE, infer=False)
    (paris,) = [f for f in m.get_all(user_id="alice").facts if "Paris" in f.text]
    edit = m.update(paris.id, "Alice lives in Berlin", user_id="alice")
    assert edit.previous_text == "Alice lives in Paris"

    def found(**kw: object) -> list[str]:
        return [f.text for f in m.search("where does Alice live", user_id="alice", **kw).facts]

    assert found(as_of="1999-01-01") == []  # nothing was said then
    assert found(as_of=MAY + timedelta(days=1)) == ["Alice lives in Paris"]  # the old text
    assert sorted(found(as_of=JUNE + timedelta(days=1))) == [
        "Alice adopted a dog named Rex", "Alice lives in Paris",
    ]  # fmt: skip
    now = datetime.now(UTC) + timedelta(minutes=1)  # the user's edit is stamped when it was made
    assert sorted(found(as_of=now)) == ["Alice adopted a dog named Rex", "Alice lives in Berlin"]
    assert sorted(found()) == sorted(found(as_of=now))  # current = as of now
    hits = m.search("where does Alice live", user_id="alice", as_of=MAY + timedelta(days=1))
    (old,) = hits.facts
    assert (old.id, old.valid_from, old.invalid_at is not None) == (paris.id, MAY, True)

    context = m.context("where does Alice live", user_id="alice", as_of=MAY + timedelta(days=1))
    assert "Paris" in context and "Berlin" not in context and "Rex" not in context
    assert "Rex" not in m.context("dog", user_id="alice", as_of="2000-01-01")

    then = m.get_all(user_id="alice", as_of=MAY + timedelta(days=1)).facts
    assert [f.text for f in then] == ["Alice lives in Paris"]
    assert [f.text for f in m.get_all(user_id="alice", as_of="1999-01-01").facts] == []

    m.delete(paris.id, user_id="alice")
    later = datetime.now(UTC) + timedelta(minutes=2)
    assert found(as_of=later) == ["Alice adopted a dog named Rex"]
    assert found(as_of=MAY + timedelta(days=1)) == ["Alice lives in Paris"]  # history stays
    # another tenant's history is never read
    assert m.search("Alice", user_id="bob", as_of=MAY + timedelta(days=1)).facts == []


def test_an_episode_caused_update_ends_the_old_text_at_the_conversation_time(
    make_memory: MemoryFactory,
) -> None:
    m = make_memory(memory={"facts": True})
    m.add("Alice works at Acme", user_id="alice", timestamp=MAY, infer=False)
    (acme,) = m.get_all(user_id="alice").facts
    ep = Episode(tenant=A, messages=[Message(content="I moved to Initech", timestamp=JUNE)],
                 timestamp=JUNE)  # fmt: skip
    from mem0g.types import FactChange

    vector = m.embedder.embed(["Alice works at Initech"])[0]
    m.store.apply(
        WritePlan(
            tenant=A, episode=ep,
            fact_changes=[FactChange(fact_id=acme.id, text="Alice works at Initech",
                                     embedding=[float(x) for x in vector])],
            fact_events=[FactEvent(fact_id=acme.id, tenant=A, event="UPDATE",
                                   old_text="Alice works at Acme",
                                   new_text="Alice works at Initech", episode_id=ep.id)],
        )
    )  # fmt: skip

    def at(when: datetime) -> list[str]:
        return [f.text for f in m.search("Alice job", user_id="alice", as_of=when).facts]

    assert at(JUNE - timedelta(days=1)) == ["Alice works at Acme"]
    assert at(JUNE + timedelta(days=1)) == ["Alice works at Initech"]


def test_as_of_and_include_invalid_are_refused_together(
    tmp_path: Path, hashing: CachedEmbedder
) -> None:
    """`include_invalid` (every time) would silently drop `as_of`'s filter: what was said
    after `as_of` came back (README's CLI block ran both flags together, issue #15 item 1)."""
    with Memory({"graph_store": {"path": str(tmp_path)}}, embedder=hashing) as m:
        m.add("Alice lives in Paris", user_id="alice", timestamp=JUNE, infer=False)
        for read in (
            lambda: m.search("Paris", user_id="alice", as_of=MAY, include_invalid=True),
            lambda: m.get_all(user_id="alice", as_of=MAY, include_invalid=True),
        ):
            with pytest.raises(ValueError, match="exclude each other"):
                read()
        assert m.search("Paris", user_id="alice", as_of=MAY).facts == []  # each alone works
        assert m.search("Paris", user_id="alice", include_invalid=True).facts


def test_an_add_without_a_timestamp_is_dated_by_its_first_message(
    make_memory: MemoryFactory, hashing: CachedEmbedder
) -> None:
    """The messages' own times date the episode (as `mem0g add --file` does): it was dated
    when the add ran, so `as_of` at the conversation's time found nothing of it."""
    m = make_memory(memory={"facts": True}, embedder=hashing)
    said = [{"content": "Alice lives in Paris", "timestamp": "2023-05-08T10:00:00+02:00"},
            {"content": "Alice has a cat"}]  # fmt: skip
    m.add(said, user_id="alice", infer=False)
    facts = m.get_all(user_id="alice").facts
    assert {f.said_at for f in facts} == {datetime(2023, 5, 8, 8, tzinfo=UTC)}
    then = m.get_all(user_id="alice", as_of=JUNE).facts
    assert sorted(f.text for f in then) == ["Alice has a cat", "Alice lives in Paris"]
    (episode,) = m.episodes(user_id="alice")
    assert episode.timestamp == datetime(2023, 5, 8, 8, tzinfo=UTC)


def test_equal_as_of_hits_come_in_write_order_as_current_ones_do(
    make_memory: MemoryFactory, hashing: CachedEmbedder
) -> None:
    """Facts of equal score (one text, said in many adds and tenants of one user) come back
    in write order with `as_of` as without it: the `as_of` ranking keeps the order of the
    store's fact timeline for ties, which Neo4j returned by the facts' random ids."""
    m = make_memory(memory={"facts": True}, embedder=hashing)
    tenants = [{"user_id": "alice", "run_id": "r0"}, {"user_id": "alice", "agent_id": "bot"},
               {"user_id": "alice", "run_id": "r1"}]  # fmt: skip
    for day in range(12):
        m.add([{"content": "Alice likes green tea"}] * 2, **tenants[day % 3],
              timestamp=MAY + timedelta(days=day), infer=False)  # fmt: skip
    later = datetime.now(UTC) + timedelta(minutes=1)

    def order(scope: dict[str, str], **kw: object) -> list[tuple[datetime, str]]:
        hits = m.search("green tea", **scope, limit=24, **kw).facts
        assert len({round(f.score, 9) for f in hits}) == 1  # all tied
        return [(f.said_at, f.id) for f in hits]

    for scope in tenants:  # one tenant: the very order of a current search
        assert order(scope, as_of=later) == order(scope)
    said = [when for when, _ in order({"user_id": "alice"}, as_of=later)]
    assert said == sorted(said) and len(said) == 24  # the user's tenants: write order
