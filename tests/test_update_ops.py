"""The update resolver's operations against stored edges, end to end on both stores: what an
awkward `resolve_updates` answer (backdated, repeated, contradicting the add itself) leaves in
the current view and in `as_of`."""

from __future__ import annotations

import pytest

from mem0g.testing.script import turn

T1 = "2023-05-08T13:56:00"
T2 = "2023-09-01T10:00:00"
T3 = "2024-01-15T09:00:00"

ALICE_LONDON = [("Alice", "person"), ("London", "city")]
LONDON = turn("I live in London", ALICE_LONDON, [("Alice", "lives_in", "London")])


def _events(result) -> list[tuple[str, str, str, str]]:
    return [(c.event.value, c.source, c.relation, c.destination) for c in result.relations]


def _triples(snapshot) -> set[tuple[str, str, str]]:
    return {(r.source, r.relation, r.destination) for r in snapshot.relations}


def test_a_backdated_invalidate_does_not_end_a_later_edge(make_memory) -> None:
    """An episode older than an edge cannot end it: the edge got invalid_at before its
    valid_from and vanished from the current view and from every as_of."""
    m = make_memory(
        turn("I live in Paris", [("Alice", "person"), ("Paris", "city")],
             [("Alice", "lives_in", "Paris")])
        + turn("joined Acme", [("Alice", "person"), ("Acme", "company")],
               [("Alice", "works_at", "Acme")], [("INVALIDATE", None, "e1")])
    )  # fmt: skip
    m.add("I live in Paris", user_id="alice", timestamp=T2)
    result = m.add("I joined Acme", user_id="alice", timestamp=T1)  # an import of old history
    assert _events(result) == [("ADD", "Alice", "works_at", "Acme")]
    now = {("Alice", "lives_in", "Paris"), ("Alice", "works_at", "Acme")}
    assert _triples(m.get_all(user_id="alice")) == now
    assert _triples(m.get_all(user_id="alice", as_of=T3)) == now
    (paris,) = [r for r in m.get_all(user_id="alice").relations if r.destination == "Paris"]
    assert paris.invalid_at is None


def test_an_edge_said_twice_in_one_add_gains_one_mention(make_memory) -> None:
    """Mentions count episodes: a triple identical to the edge and another the LLM calls its
    duplicate, in one add, gave it two mentions and the episode twice in its provenance."""
    m = make_memory(
        LONDON
        + turn("London, yes", ALICE_LONDON,
               [("Alice", "lives_in", "London"), ("Alice", "resides_in", "London")],
               [("NOOP", 1, "e1")])
    )  # fmt: skip
    first = m.add("I live in London", user_id="alice", timestamp=T1)
    again = m.add("London, yes: I reside there", user_id="alice", timestamp=T2)
    assert _events(again) == [("NOOP", "Alice", "lives_in", "London")]
    (rel,) = m.get_all(user_id="alice", include_invalid=True).relations
    assert rel.mentions == 2
    assert [p.episode_id for p in rel.provenance] == [first.episode_id, again.episode_id]


def test_an_edge_the_add_restates_is_not_ended_by_it(make_memory) -> None:
    """The LLM is not shown a triple identical to a valid edge (a NOOP without asking), so it
    may end that edge for another triple of the same add: the add said London and left it
    invalid, reported both as NOOP and as INVALIDATE."""
    m = make_memory(
        LONDON
        + turn("Paris and London", [("Alice", "person"), ("Paris", "city"), ("London", "city")],
               [("Alice", "lives_in", "Paris"), ("Alice", "lives_in", "London")],
               [("INVALIDATE", 0, "e1")])
    )  # fmt: skip
    m.add("I live in London", user_id="alice", timestamp=T1)
    result = m.add("I live in Paris and London", user_id="alice", timestamp=T2)
    assert _events(result) == [
        ("ADD", "Alice", "lives_in", "Paris"),
        ("NOOP", "Alice", "lives_in", "London"),
    ]
    both = {("Alice", "lives_in", "Paris"), ("Alice", "lives_in", "London")}
    assert _triples(m.get_all(user_id="alice")) == both
    assert _triples(m.get_all(user_id="alice", as_of=T3)) == both
    (london,) = [r for r in m.get_all(user_id="alice").relations if r.destination == "London"]
    assert london.mentions == 2 and london.invalid_at is None


@pytest.mark.parametrize("order", [("e1", "e2"), ("e2", "e1")])
def test_an_old_fact_ends_at_the_first_newer_fact_it_contradicts(make_memory, order) -> None:
    """A backdated triple contradicting two newer edges is history until the earlier of them
    starts; it ended at whichever the answer named last, so in between as_of showed it."""
    paris = [("Alice", "person"), ("Paris", "city")]
    m = make_memory(
        turn("in Berlin", [("Alice", "person"), ("Berlin", "city")],
             [("Alice", "lives_in", "Berlin")])
        + turn("in Rome", [("Alice", "person"), ("Rome", "city")],
               [("Alice", "lives_in", "Rome")], [("ADD", 0, None)])
        + turn("in Paris", paris, [("Alice", "lives_in", "Paris")],
               [("INVALIDATE", 0, order[0]), ("INVALIDATE", 0, order[1])])
    )  # fmt: skip
    m.add("I live in Berlin", user_id="alice", timestamp=T2)
    m.add("I live in Rome too", user_id="alice", timestamp=T3)
    m.add("I live in Paris", user_id="alice", timestamp=T1)
    history = m.get_all(user_id="alice", include_invalid=True).relations
    (old,) = [r for r in history if r.destination == "Paris"]
    assert old.invalid_at.isoformat() == "2023-09-01T10:00:00+00:00"  # Berlin's start
    between = m.get_all(user_id="alice", as_of="2023-12-01")
    assert _triples(between) == {("Alice", "lives_in", "Berlin")}
    assert _triples(m.get_all(user_id="alice", as_of="2023-06-01")) == {
        ("Alice", "lives_in", "Paris")
    }


def test_a_pairing_of_edges_about_different_entities_ends_nothing(make_memory) -> None:
    """The LLM sees every candidate edge of the add at once, so it can pair a new triple
    with another triple's candidate: "Alice lives in Berlin" ended Bob's home in Paris. A
    fact only contradicts (or repeats) an edge sharing one of its entities."""
    people = [("Alice", "person"), ("London", "city"), ("Bob", "person"), ("Paris", "city")]
    homes = [("Alice", "lives_in", "London"), ("Bob", "lives_in", "Paris")]
    later = [("Alice", "person"), ("Berlin", "city"), ("Bob", "person"), ("tea", "drink")]
    m = make_memory(
        turn("Alice lives in London, Bob in Paris", people, homes)
        + turn("Alice moved to Berlin", later,
               [("Alice", "lives_in", "Berlin"), ("Bob", "likes", "tea")],
               [("UPDATE", 0, "e2"), ("NOOP", 1, "e1")])
    )  # fmt: skip
    m.add("Alice lives in London, Bob in Paris", user_id="u", timestamp=T1)
    result = m.add("Alice moved to Berlin; Bob likes tea", user_id="u", timestamp=T2)
    assert _events(result) == [
        ("ADD", "Alice", "lives_in", "Berlin"),
        ("ADD", "Bob", "likes", "tea"),
    ]
    assert ("Bob", "lives_in", "Paris") in _triples(m.get_all(user_id="u"))
