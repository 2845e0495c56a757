"""Entity repair on both stores (`store_kind`): merge, split, history, renames by
`AliasUpdate.name`, possible duplicates; atomic on an injected failure, tenant-scoped; and
the `mem0g entities` commands (embedded store, CliRunner)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import CURRENT, DIMS, EVERYTHING, T0, Store, entity, ids, plan, relation, walk
from cli_runner import CliRunner

from mem0g import Memory
from mem0g.archive import archive_lines, read_archive
from mem0g.cli import app
from mem0g.pipeline import GraphPart, Stages
from mem0g.stores import EmbeddedGraphStore, StoreError
from mem0g.stores.base import CrossTenantError, RepairError, UnknownEntityError
from mem0g.stores.embedded import repairs as embedded_module
from mem0g.stores.neo4j import Neo4jGraphStore
from mem0g.types import (
    AliasUpdate,
    Entity,
    Invalidation,
    PossibleDuplicate,
    Relation,
    Tenant,
    WritePlan,
)

A = Tenant(user_id="a", run_id="r1")
A2 = Tenant(user_id="a", run_id="r2")
B = Tenant(user_id="b")
ALICE = Tenant(user_id="a")  # a scope covering A and A2


@dataclass
class World:
    """Robert and Bob (one person, two records) with edges in every direction."""

    robert: Entity
    bob: Entity
    acme: Entity
    paris: Entity
    jazz: Entity
    works: Relation  # robert -> acme (keep's own)
    lives: Relation  # bob -> paris (out of other)
    employs: Relation  # acme -> bob (into other)
    knows: Relation  # bob -> robert (between: a would-be self-loop)
    likes: Relation  # bob -> jazz, ended (history moves too)


def world(store: Store, tenant: Tenant, rng: np.random.Generator) -> World:
    robert, bob, acme, paris, jazz = (
        entity(tenant, n, rng) for n in ("Robert", "Bob", "Acme", "Paris", "Jazz")
    )
    bob.aliases, bob.keys = ["Bobby"], ["bob", "bobby"]
    rels = [
        relation(tenant, robert, "works_at", acme, rng),
        relation(tenant, bob, "lives_in", paris, rng),
        relation(tenant, acme, "employs", bob, rng),
        relation(tenant, bob, "knows", robert, rng),
        relation(tenant, bob, "likes", jazz, rng, invalid_at=T0),
    ]
    store.apply(plan(tenant, [robert, bob, acme, paris, jazz], rels))
    stored = store.get_relations(tenant, ids(rels))
    return World(robert, bob, acme, paris, jazz, *stored)


def snapshot(store: Store, scope: Tenant) -> Any:
    snap = store.snapshot(scope, EVERYTHING)
    return (snap, [store.entity_history(scope, e.id) for e in snap.entities])


# ---------------------------------------------------------------- merge


def test_merge_repoints_every_edge_and_keeps_all_names(
    store: Store, rng: np.random.Generator
) -> None:
    w = world(store, A, rng)
    result = store.merge_entities(A, w.robert.id, w.bob.id)
    assert result.removed_id == w.bob.id and result.removed_name == "Bob"
    assert sorted(result.moved_relations) == sorted([w.lives.id, w.employs.id, w.likes.id])
    assert result.dropped_relations == [w.knows.id]
    assert result.aliases_added == ["Bob", "Bobby"]
    assert result.keys_added == ["bob", "bobby"]
    (keep,) = store.get_entities(A, [w.robert.id])
    assert keep.name == "Robert" and keep.aliases == ["Bob", "Bobby"]
    assert keep.keys == ["robert", "bob", "bobby"]
    assert keep.embedding == w.robert.embedding  # never re-embedded
    assert result.keep.aliases == keep.aliases and result.keep.embedding is None
    assert store.get_entities(A, [w.bob.id]) == []
    assert [e.id for e in store.find_entities(A, ["bob", "bobby"])] == [w.robert.id]
    lives, employs, likes = store.get_relations(A, [w.lives.id, w.employs.id, w.likes.id])
    assert (lives.source_id, lives.source, lives.destination) == (w.robert.id, "Robert", "Paris")
    assert (employs.destination_id, employs.destination) == (w.robert.id, "Robert")
    assert (likes.source_id, likes.invalid_at) == (w.robert.id, T0)  # an ended edge moves too
    assert lives.embedding == w.lives.embedding and lives.provenance == w.lives.provenance
    assert store.get_relations(A, [w.knows.id]) == []
    touching = store.relations_touching(A, [w.robert.id], EVERYTHING)
    assert sorted(ids(touching)) == sorted([w.works.id, w.lives.id, w.employs.id, w.likes.id])
    assert store.relations_touching(A, [w.bob.id], EVERYTHING) == []
    walked = walk(store, A, [w.paris.id], 2, CURRENT, 10)
    assert {r.id for r, _ in walked} == {w.lives.id, w.works.id, w.employs.id}
    snap = store.snapshot(A, EVERYTHING)
    assert w.bob.id not in ids(snap.entities) and w.knows.id not in ids(snap.relations)
    stats = store.stats(A)
    assert (stats.entities, stats.relations) == (4, 4)
    (event,) = store.entity_history(A, w.robert.id)
    assert (event.event, event.entity_id, event.other_id) == ("MERGE", w.robert.id, w.bob.id)
    assert event.id == result.merge_id and event.actor == "user"
    assert store.entity_history(A, w.bob.id) == [event]  # where did Bob go?
    # the merged-away entity is gone from vector search as well
    query = np.asarray(w.bob.embedding, dtype=np.float32)
    found = store.similar_entities(A, query, 2, exact=True)
    assert len(found) == 2 and w.bob.id not in [e.id for e, _ in found]
    assert w.bob.id not in [e.id for e, _ in store.similar_entities(A, query, 10)]


def test_split_restores_exactly_what_the_merge_moved(
    store: Store, rng: np.random.Generator
) -> None:
    w = world(store, A, rng)
    before = store.snapshot(A, EVERYTHING)
    merged = store.merge_entities(A, w.robert.id, w.bob.id)
    later = relation(A, w.robert, "plays", w.jazz, rng)  # keep gains an edge after the merge
    store.apply(plan(A, [], [later]))
    split = store.split_entity(A, merged.merge_id)
    assert split.merge_id == merged.merge_id and split.restored.id == w.bob.id
    assert sorted(split.moved_relations) == sorted(merged.moved_relations)
    assert split.restored_relations == [w.knows.id]
    (bob,) = store.get_entities(A, [w.bob.id])
    assert bob == w.bob  # id, name, type, aliases, keys, embedding, times
    (robert,) = store.get_entities(A, [w.robert.id])
    assert (robert.aliases, robert.keys) == (w.robert.aliases, w.robert.keys)
    assert robert.embedding == w.robert.embedding
    originals = [w.lives, w.employs, w.likes, w.works]
    assert store.get_relations(A, ids(originals)) == originals
    (knows,) = store.get_relations(A, [w.knows.id])
    assert knows.model_dump(exclude={"updated_at"}) == w.knows.model_dump(exclude={"updated_at"})
    assert store.get_relations(A, [later.id])[0].source_id == w.robert.id  # stays on keep
    assert [e.id for e in store.find_entities(A, ["bob"])] == [w.bob.id]
    assert [e.id for e in store.find_entities(A, ["robert"])] == [w.robert.id]
    after = store.snapshot(A, EVERYTHING)
    assert sorted(ids(after.entities)) == sorted(ids(before.entities))
    assert sorted(ids(after.relations)) == sorted([*ids(before.relations), later.id])
    history = store.entity_history(A, w.robert.id)
    assert [e.event for e in history] == ["MERGE", "SPLIT"]
    assert history[1].merge_id == merged.merge_id and history[1].id == split.split_id
    assert store.entity_history(A, w.bob.id) == history
    with pytest.raises(RepairError, match="split already"):
        store.split_entity(A, merged.merge_id)
    query = np.asarray(w.bob.embedding, dtype=np.float32)
    assert store.similar_entities(A, query, 1, exact=True)[0][0].id == w.bob.id
    # and it can be merged again
    again = store.merge_entities(A, w.robert.id, w.bob.id)
    assert sorted(again.moved_relations) == sorted(merged.moved_relations)


def test_split_of_a_keep_merged_away_since_is_refused(
    store: Store, rng: np.random.Generator
) -> None:
    w = world(store, A, rng)
    first = store.merge_entities(A, w.robert.id, w.bob.id)
    second = store.merge_entities(A, w.acme.id, w.robert.id)  # nonsense, but allowed
    with pytest.raises(RepairError, match="split that later merge first"):
        store.split_entity(A, first.merge_id)
    store.split_entity(A, second.merge_id)
    store.split_entity(A, first.merge_id)
    assert store.get_relations(A, [w.lives.id])[0].source_id == w.bob.id


def test_a_split_leaves_keep_the_names_another_merge_brought(
    store: Store, rng: np.random.Generator
) -> None:
    """Two records called Bob merged into Robert, then the first merge split: Robert still
    holds the other Bob, so it keeps the name and key "bob" (an add saying "Bob" must find
    it); once that merge is split too, Robert is as it was."""
    w = world(store, A, rng)
    twin = entity(A, "Bob", rng)
    twin.keys = ["bob", "bob twin"]
    store.apply(plan(A, [twin], []))
    first = store.merge_entities(A, w.robert.id, w.bob.id)
    second = store.merge_entities(A, w.robert.id, twin.id)
    store.split_entity(A, first.merge_id)
    (robert,) = store.get_entities(A, [w.robert.id])
    assert robert.aliases == ["Bob"] and robert.keys == ["robert", "bob", "bob twin"]
    assert sorted(ids(store.find_entities(A, ["bob"]))) == sorted([w.robert.id, w.bob.id])
    store.split_entity(A, second.merge_id)
    (robert,) = store.get_entities(A, [w.robert.id])
    assert (robert.aliases, robert.keys) == (w.robert.aliases, w.robert.keys)
    assert sorted(ids(store.find_entities(A, ["bob"]))) == sorted([w.bob.id, twin.id])


def _embedded_fault(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any) -> None:
        raise RuntimeError("injected: the disk is on fire")

    monkeypatch.setattr(embedded_module, "_write_entity_event", fail)


def _neo4j_fault(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    real = store._run  # type: ignore[union-attr]

    def run(tx: Any, name: str, params: dict[str, Any]) -> Any:
        if name == "create_entity_events":  # after every other write of the repair
            raise RuntimeError("injected: the server is on fire")
        return real(tx, name, params)

    monkeypatch.setattr(store, "_run", run)


def test_merge_and_split_are_atomic(
    store: Store,
    open_store: Callable[..., Store],
    rng: np.random.Generator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = world(store, A, rng)
    pair = PossibleDuplicate(entity_id=w.bob.id, candidate_id=w.robert.id, reason="nickname")
    store.apply(WritePlan(tenant=A, possible_duplicates=[pair]))
    before = snapshot(store, A)
    inject = _neo4j_fault if isinstance(store, Neo4jGraphStore) else _embedded_fault
    inject(store, monkeypatch)
    with pytest.raises(RuntimeError, match="injected"):
        store.merge_entities(A, w.robert.id, w.bob.id)
    assert snapshot(store, A) == before
    assert store.possible_duplicates(A) == [pair]
    with open_store(dims=DIMS) as again:  # what the database holds
        assert snapshot(again, A) == before
    monkeypatch.undo()
    merged = store.merge_entities(A, w.robert.id, w.bob.id)
    assert store.possible_duplicates(A) == []
    after_merge = snapshot(store, A)
    inject(store, monkeypatch)
    with pytest.raises(RuntimeError, match="injected"):
        store.split_entity(A, merged.merge_id)
    assert snapshot(store, A) == after_merge
    with open_store(dims=DIMS) as again:
        assert snapshot(again, A) == after_merge


# ---------------------------------------------------------------- tenants and bad input


def test_merges_stay_inside_one_tenant(store: Store, rng: np.random.Generator) -> None:
    w = world(store, A, rng)
    other_run = world(store, A2, rng)
    theirs = world(store, B, rng)
    b_before = snapshot(store, B)
    a2_before = snapshot(store, A2)
    with pytest.raises(CrossTenantError, match="different tenants"):
        store.merge_entities(ALICE, w.robert.id, other_run.bob.id)
    with pytest.raises(UnknownEntityError, match="no entity"):  # B's id is not in A's scope
        store.merge_entities(A, w.robert.id, theirs.bob.id)
    with pytest.raises(UnknownEntityError):  # nor A's in B's
        store.merge_entities(B, w.robert.id, w.bob.id)
    with pytest.raises(UnknownEntityError):
        store.merge_entities(A, w.robert.id, "no-such-id")
    with pytest.raises(RepairError, match="itself"):
        store.merge_entities(A, w.robert.id, w.robert.id)
    assert isinstance(CrossTenantError("x"), ValueError)
    assert store.entity_history(ALICE, w.robert.id) == []
    merged = store.merge_entities(ALICE, w.robert.id, w.bob.id)  # a wide scope may merge
    assert snapshot(store, B) == b_before and snapshot(store, A2) == a2_before
    assert [e.id for e in store.find_entities(B, ["bob"])] == [theirs.bob.id]
    assert store.entity_history(B, w.robert.id) == []
    with pytest.raises(UnknownEntityError):
        store.split_entity(B, merged.merge_id)
    with pytest.raises(UnknownEntityError):
        store.split_entity(A, "no-such-merge")


# ---------------------------------------------------------------- renames


def test_alias_update_name_renames_the_entity_and_its_edges(
    store: Store, rng: np.random.Generator
) -> None:
    w = world(store, A, rng)
    new = relation(A, w.bob, "visits", w.paris, rng)
    new.source = "Bob"  # the plan's own edge, named before the rename
    rename = AliasUpdate(entity_id=w.bob.id, aliases=[], keys=["bob okafor"], name="Bob Okafor")
    store.apply(plan(A, [], [new], alias_updates=[rename]))
    (bob,) = store.get_entities(A, [w.bob.id])
    assert bob.name == "Bob Okafor" and bob.aliases == ["Bobby", "Bob"]
    assert bob.keys == ["bob", "bobby", "bob okafor"] and bob.embedding == w.bob.embedding
    lives, employs, knows, likes, visits = store.get_relations(
        A, [w.lives.id, w.employs.id, w.knows.id, w.likes.id, new.id]
    )
    assert {lives.source, knows.source, likes.source, visits.source} == {"Bob Okafor"}
    assert employs.destination == "Bob Okafor" and knows.destination == "Robert"
    assert [e.id for e in store.find_entities(A, ["bob", "bob okafor"])] == [w.bob.id]
    (event,) = store.entity_history(A, w.bob.id)
    assert (event.event, event.old_name, event.new_name) == ("RENAME", "Bob", "Bob Okafor")
    assert event.actor == "resolver" and event.episode_id is not None
    # the same name again changes nothing; a fuller alias coming back is no alias of itself
    back = AliasUpdate(entity_id=w.bob.id, aliases=["Bob Okafor"], keys=[], name="Bob Okafor")
    store.apply(WritePlan(tenant=A, alias_updates=[back]))
    assert len(store.entity_history(A, w.bob.id)) == 1
    # a merge after the rename names the edges by keep, and split gives them the old name back
    merged = store.merge_entities(A, w.robert.id, w.bob.id)
    assert store.get_relations(A, [w.lives.id])[0].source == "Robert"
    store.split_entity(A, merged.merge_id)
    assert store.get_relations(A, [w.lives.id])[0].source == "Bob Okafor"


# ---------------------------------------------------------------- possible duplicates


def test_possible_duplicates_are_recorded_listed_and_settled(
    store: Store, rng: np.random.Generator
) -> None:
    w = world(store, A, rng)
    diego = entity(A, "Diego", rng)
    pairs = [
        PossibleDuplicate(entity_id=diego.id, candidate_id=w.bob.id, reason="first name"),
        PossibleDuplicate(entity_id=w.bob.id, candidate_id=w.robert.id, reason="nickname of"),
        PossibleDuplicate(entity_id=w.robert.id, candidate_id=w.bob.id, reason="again, reversed"),
    ]
    store.apply(plan(A, [diego], [], possible_duplicates=pairs))
    assert store.possible_duplicates(A) == pairs[:2]  # one record per unordered pair
    assert store.possible_duplicates(ALICE) == pairs[:2]
    assert store.possible_duplicates(B) == []
    bad = PossibleDuplicate(entity_id=diego.id, candidate_id="ghost", reason="x")
    with pytest.raises(StoreError, match="ghost"):
        store.apply(plan(A, [], [], possible_duplicates=[bad]))
    with pytest.raises(StoreError):  # another tenant's entity is no candidate
        store.apply(plan(B, [], [], possible_duplicates=[pairs[0]]))
    assert store.episodes(B) == []  # nothing of the refused plans was written
    store.merge_entities(A, w.robert.id, w.bob.id)
    (left,) = store.possible_duplicates(A)  # Bob/Robert settled; Diego/Bob is now Diego/Robert
    assert (left.entity_id, left.candidate_id, left.reason) == (diego.id, w.robert.id, "first name")
    store.delete_tenant(A)
    assert store.possible_duplicates(A) == []


def test_split_puts_back_the_pairs_the_merge_moved(store: Store, rng: np.random.Generator) -> None:
    """A merge re-points other's pairs onto keep; its split gives them back to other as the
    resolver recorded them (keep never was "Diego's" candidate). The pair of the two stays
    settled: the split is the answer to it."""
    w = world(store, A, rng)
    diego, erin = entity(A, "Diego", rng), entity(A, "Erin", rng)
    pairs = [
        PossibleDuplicate(entity_id=diego.id, candidate_id=w.bob.id, reason="first name"),
        PossibleDuplicate(entity_id=w.bob.id, candidate_id=w.robert.id, reason="nickname of"),
        PossibleDuplicate(entity_id=erin.id, candidate_id=w.bob.id, reason="initial"),
        PossibleDuplicate(entity_id=erin.id, candidate_id=w.robert.id, reason="keep's own"),
    ]
    store.apply(plan(A, [diego, erin], [], possible_duplicates=pairs))
    merged = store.merge_entities(A, w.robert.id, w.bob.id)
    moved = [(p.entity_id, p.candidate_id) for p in store.possible_duplicates(A)]
    assert moved == [(erin.id, w.robert.id), (diego.id, w.robert.id)]
    store.split_entity(A, merged.merge_id)
    assert sorted(store.possible_duplicates(A), key=lambda p: p.reason) == sorted(
        [pairs[0], pairs[2], pairs[3]], key=lambda p: p.reason
    )


def test_memory_add_records_the_graph_paths_possible_duplicates(
    make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory copies GraphPart.possible_duplicates into the plan, dropping pairs that name an
    entity the plan does not write and the tenant does not have."""
    memory = make_memory()
    tenant = Tenant(user_id="a")
    rng = np.random.default_rng(5)
    dims = memory.embedder.dims
    old = Entity(tenant=tenant, name="Diego Ruiz", keys=["diego ruiz"],
                 embedding=[1.0] + [0.0] * (dims - 1))  # fmt: skip
    memory.store.apply(WritePlan(tenant=tenant, new_entities=[old]))
    new = Entity(tenant=tenant, name="Diego", keys=["diego"],
                 embedding=list(rng.standard_normal(dims)))  # fmt: skip
    part = GraphPart(
        new_entities=[new],
        possible_duplicates=[
            PossibleDuplicate(entity_id=new.id, candidate_id=old.id, reason="first name of 1"),
            PossibleDuplicate(entity_id="dropped-by-the-pipeline", candidate_id=old.id, reason="x"),
        ],
    )
    monkeypatch.setattr(Stages, "graph_path", lambda self, *args: part)
    memory.add("Diego called.", user_id="a")
    (pair,) = memory.possible_duplicates(user_id="a")
    assert (pair.entity_id, pair.candidate_id, pair.reason) == (new.id, old.id, "first name of 1")
    merged = memory.merge_entities(old.id, new.id, user_id="a")
    assert memory.possible_duplicates(user_id="a") == []
    assert memory.get_entity(new.id, user_id="a") is None
    history = memory.entity_history(old.id, user_id="a")
    assert history[0].undo is not None and history[0].undo.other.embedding is None
    split = memory.split_entity(entity_id=old.id, other_id=new.id, user_id="a")
    assert split.merge_id == merged.merge_id
    assert [e.id for e in memory.list_entities(user_id="a")] == [old.id, new.id]
    with pytest.raises(UnknownEntityError):
        memory.split_entity(entity_id=old.id, other_id=new.id, user_id="a")
    with pytest.raises(UnknownEntityError):
        memory.merge_entities(old.id, new.id, user_id="b")


def test_an_import_merge_of_an_older_backup_keeps_the_merge(
    make_memory: Callable[..., Memory], tmp_path: Path
) -> None:
    """A backup taken before a merge, imported with merge=True: the store had the merged-away
    entity (its history says so), so it stays merged, as a fact the store had keeps the
    store's version. The backup's records naming it land on the entity it was merged into
    (a would-be self-loop is left out, as the merge left it out), and the merge can still be
    split."""
    memory = make_memory()
    tenant = Tenant(user_id="a")
    names = ["Robert", "Bob", "Paris", "Diego"]
    vectors = [[float(x) for x in v] for v in memory.embedder.embed(names)]
    robert, bob, paris, diego = (
        Entity(tenant=tenant, name=n, keys=[n.lower()], embedding=v)
        for n, v in zip(names, vectors, strict=True)
    )

    def edge(src: Entity, rel: str, dst: Entity) -> Relation:
        ends = {"source_id": src.id, "source": src.name, "destination_id": dst.id}
        return Relation(tenant=tenant, relation=rel, destination=dst.name, **ends,
                        embedding=vectors[0])  # fmt: skip

    lives, knows = edge(bob, "lives_in", paris), edge(bob, "knows", robert)
    pair = PossibleDuplicate(entity_id=diego.id, candidate_id=bob.id, reason="first name")
    memory.store.apply(
        WritePlan(tenant=tenant, new_entities=[robert, bob, paris, diego],
                  new_relations=[lives, knows], possible_duplicates=[pair])
    )  # fmt: skip
    backup = tmp_path / "before.jsonl"
    memory.export(backup, user_id="a")
    merged = memory.merge_entities(robert.id, bob.id, user_id="a")
    header, parts = read_archive(backup.read_text().splitlines())
    (part,) = parts
    later = edge(bob, "visits", paris)  # an edge at Bob the store never had
    part.relations.append(later)
    backup.write_text("\n".join(archive_lines(header, [part])) + "\n")
    memory.import_archive(backup, merge=True)
    assert memory.get_entity(bob.id, user_id="a") is None
    assert [e.id for e in memory.store.find_entities(tenant, ["bob"])] == [robert.id]
    assert memory.store.get_relations(tenant, [knows.id]) == []
    (visits,) = memory.store.get_relations(tenant, [later.id])
    assert (visits.source_id, visits.source) == (robert.id, "Robert")
    (left,) = memory.possible_duplicates(user_id="a")
    assert (left.entity_id, left.candidate_id) == (diego.id, robert.id)
    split = memory.split_entity(merged.merge_id, user_id="a")
    assert split.restored.id == bob.id and split.restored_relations == [knows.id]


@pytest.mark.neo4j
def test_neo4j_stores_holding_vectors_notice_a_merge(
    neo4j_connect: Callable[..., Neo4jGraphStore], rng: np.random.Generator
) -> None:
    """Another store (process) holds the tenant's entity vectors; the merge's new epoch makes
    it read them afresh, so the removed entity takes no place in its top k."""
    writer, reader = neo4j_connect(dims=DIMS), neo4j_connect(dims=DIMS)
    w = world(writer, A, rng)
    query = np.asarray(w.bob.embedding, dtype=np.float32)
    assert reader.similar_entities(A, query, 2, exact=True)[0][0].id == w.bob.id  # held now
    merged = writer.merge_entities(A, w.robert.id, w.bob.id)
    found = reader.similar_entities(A, query, 2, exact=True)
    assert len(found) == 2 and w.bob.id not in [e.id for e, _ in found]
    writer.split_entity(A, merged.merge_id)
    assert reader.similar_entities(A, query, 1, exact=True)[0][0].id == w.bob.id


# ---------------------------------------------------------------- CLI


def _cli(path: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["--path", str(path), *args])


def test_cli_entities_commands(tmp_path: Path, rng: np.random.Generator) -> None:
    path = tmp_path / "store"
    with EmbeddedGraphStore(path, dims=DIMS) as s:
        w = world(s, A, rng)
        other_run = world(s, A2, rng)
        theirs = world(s, B, rng)
        pair = PossibleDuplicate(entity_id=w.bob.id, candidate_id=w.robert.id, reason="nickname")
        s.apply(WritePlan(tenant=A, possible_duplicates=[pair]))
        s.apply(WritePlan(tenant=A, invalidations=[Invalidation(relation_id=w.works.id,
                                                                invalid_at=T0)]))  # fmt: skip
    listed = _cli(path, "entities", "list", "-u", "a", "--run", "r1", "--json")
    assert listed.exit_code == 0, listed.output
    assert [e["name"] for e in json.loads(listed.stdout)] == [
        "Robert", "Bob", "Acme", "Paris", "Jazz",
    ]  # fmt: skip
    table = _cli(path, "entities", "list", "-u", "a", "--run", "r1")
    assert table.exit_code == 0 and "Bobby" in table.stdout
    dups = _cli(path, "entities", "duplicates", "-u", "a", "--json")
    assert dups.exit_code == 0, dups.output
    (row,) = json.loads(dups.stdout)
    assert (row["entity"]["name"], row["candidate"]["name"], row["reason"]) == (
        "Bob", "Robert", "nickname",
    )  # fmt: skip
    assert "nickname" in _cli(path, "entities", "duplicates", "-u", "a").stdout
    shown = _cli(path, "entities", "show", w.bob.id, "-u", "a", "--json")
    assert json.loads(shown.stdout)["entity"]["aliases"] == ["Bobby"]
    assert len(json.loads(shown.stdout)["relations"]) == 4
    merged = _cli(path, "entities", "merge", w.robert.id, w.bob.id, "-u", "a", "--json")
    assert merged.exit_code == 0, merged.output
    merge = json.loads(merged.stdout)
    assert merge["removed_id"] == w.bob.id and merge["dropped_relations"] == [w.knows.id]
    shown = _cli(path, "entities", "show", w.robert.id, "-u", "a", "--json")
    assert [e["event"] for e in json.loads(shown.stdout)["history"]] == ["MERGE"]
    assert "MERGE" in _cli(path, "entities", "show", w.robert.id, "-u", "a").stdout
    gone = _cli(path, "entities", "show", w.bob.id, "-u", "a", "--json")
    assert gone.exit_code == 0  # merged away: its history says where it went
    assert json.loads(gone.stdout)["entity"] is None
    split = _cli(path, "entities", "split", merge["merge_id"], "-u", "a", "--json")
    assert split.exit_code == 0, split.output
    assert json.loads(split.stdout)["restored"]["id"] == w.bob.id
    again = _cli(path, "entities", "merge", w.robert.id, w.bob.id, "-u", "a")
    assert again.exit_code == 0 and "merged" in again.stdout
    by_pair = _cli(path, "entities", "split", "--keep", w.robert.id, "--other", w.bob.id, "-u", "a")
    assert by_pair.exit_code == 0, by_pair.output
    cross = _cli(path, "entities", "merge", w.robert.id, theirs.bob.id, "-u", "a")
    assert cross.exit_code == 2 and "no entity" in cross.stderr
    runs = _cli(path, "entities", "merge", w.robert.id, other_run.bob.id, "-u", "a")
    assert runs.exit_code == 2 and "different tenants" in runs.stderr
    unknown = _cli(path, "entities", "show", "nope", "-u", "a")
    assert unknown.exit_code == 2 and "no entity" in unknown.stderr
    needs_tenant = _cli(path, "entities", "list")
    assert needs_tenant.exit_code == 2
    bad_split = _cli(path, "entities", "split", "-u", "a")
    assert bad_split.exit_code == 2
