"""Full backup and restore (issue #14, item 5): `Memory.export` / `Memory.import_archive`
and `mem0g export` / `mem0g import`. The LLM is the scripted TEST DOUBLE server; embeddings
are real MiniLM (and the hashing embedder where a model change is tested)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mem0g import Memory
from mem0g.archive import (
    VERSION,
    ArchiveError,
    _separately,
    import_archive,
    read_tenant,
    tenant_plan,
)
from mem0g.stores.archive_reads import entity_events, fact_events, tenant_records
from mem0g.stores.base import StoreError
from mem0g.stores.plan_parts import plan_parts, plan_size
from mem0g.testing import ScriptedLLMServer
from mem0g.testing.script import turn
from mem0g.types import Entity, PossibleDuplicate, Tenant, WritePlan

T1, T2, T3 = "2023-05-08T13:56:00", "2023-09-01T10:00:00", "2024-01-15T09:00:00"
QUERIES = ["where does alice live?", "what does alice do at work?", "London", "Bob"]
AS_OF = "2023-06-01"  # before the move and every edit: the restored history must answer it


def _rules() -> list[dict[str, Any]]:
    return [
        *turn("I live in London", [("Alice", "person"), ("London", "city")],
              [("Alice", "lives_in", "London")], facts=["Alice lives in London"]),
        *turn("moved to Paris", [("Alice", "person"), ("Paris", "city")],
              [("Alice", "lives_in", "Paris", "2023-09-01")], [("INVALIDATE", 0, "e1")],
              facts=["Alice moved to Paris in September 2023"]),
        *turn("work with Bob", [("Alice", "person"), ("Bob", "person"), ("Acme", "company")],
              [("Alice", "works_at", "Acme"), ("Bob", "works_at", "Acme")],
              facts=["Alice works at Acme with Bob"]),
        {"task": "resolve_updates", "response": {"operations": []}},
        {"task": "update_memory", "response": {"operations": []}},
        {"task": "summarize", "response": {"summary": "Alice moved from London to Paris."}},
    ]  # fmt: skip


def _fill(m: Memory) -> None:
    """Two tenants with history: an ended edge, an updated fact, a deleted fact, a summary,
    and a merge of two entities (taken back after a restore: its undo record travels)."""
    m.add("I live in London", user_id="alice", timestamp=T1)
    m.add("I moved to Paris", user_id="alice", timestamp=T2)
    m.add("I work with Bob at Acme", user_id="alice", agent_id="helper", timestamp=T3)
    m.add("locker code 4521", user_id="bob", infer=False)
    facts = {f.text: f.id for f in m.get_all(user_id="alice").facts}
    m.update(facts["Alice lives in London"], "Alice lived in London", user_id="alice")
    m.delete(facts["Alice works at Acme with Bob"], user_id="alice")
    m.refresh_summary(user_id="alice")
    names = {e.name: e.id for e in m.get_all(user_id="alice", agent_id="helper").entities}
    m.merge_entities(names["Acme"], names["Bob"], user_id="alice", agent_id="helper")
    # a possible-duplicate pair left for review, as the resolver records one ("Diego" beside
    # "Diego Ruiz"): written directly, no script makes the resolver doubt
    bob = Tenant(user_id="bob")
    diegos = ["Diego Ruiz", "Diego"]
    ruiz, diego = (
        Entity(tenant=bob, name=name, type="person", keys=[name.lower()],
               embedding=[float(x) for x in vector])
        for name, vector in zip(diegos, m.embedder.embed(diegos), strict=True)
    )  # fmt: skip
    pair = PossibleDuplicate(entity_id=diego.id, candidate_id=ruiz.id, reason="first name of 1")
    m.store.apply(WritePlan(tenant=bob, new_entities=[ruiz, diego], possible_duplicates=[pair]))


def _state(m: Memory, scores: bool = True) -> dict[str, Any]:
    """What a user sees: get_all (history included), every fact's history, searches (now and
    as of `AS_OF`), with the facts, relations and linked entities each returns.
    `scores=False` leaves out fact and entity scores (hits and their order stay): across
    engines they differ by design, since relative fusion scales each store's own BM25 (FTS5
    clamps the IDF of a term in most texts to ~0, Lucene's stays positive)."""
    state: dict[str, Any] = {}
    for tenant in sorted(m.tenants(), key=lambda t: t.key):
        ids = tenant.model_dump()
        graph = m.get_all(**ids, include_invalid=True)
        histories = {}
        for event in fact_events(m.store, tenant):
            histories[event.fact_id] = [e.model_dump() for e in m.history(event.fact_id, **ids)]
        for entity_event in entity_events(m.store, tenant):
            for entity_id in (entity_event.entity_id, entity_event.other_id):
                histories[entity_id] = [e.model_dump() for e in m.entity_history(entity_id, **ids)]
        searches = {}
        for query, as_of in [*((q, None) for q in QUERIES), (QUERIES[0], AS_OF)]:
            hits = m.search(query, **ids, limit=5, as_of=as_of)
            searches[f"{query} as of {as_of}"] = (
                [(r.id, r.source, r.relation, r.destination, round(r.score, 5))
                 for r in hits.relations],
                [(f.id, f.text, f.valid_from, f.invalid_at, round(f.score, 5) if scores else None)
                 for f in hits.facts],
                [(e.id, e.name, e.matched_by, round(e.score, 5) if scores else None)
                 for e in hits.entities],
            )  # fmt: skip
        state[tenant.key] = {
            "graph": graph.model_dump(),
            "history": histories,
            "search": searches,
            "summary": m.summary(**ids),
            "duplicates": m.possible_duplicates(**ids),
            "episodes": [e.model_dump() for e in m.store.episodes(tenant) if e.tenant == tenant],
        }
    return state


def _same(got: dict[str, Any], want: dict[str, Any]) -> None:
    """`got == want`, part by part, so a failure names the tenant, the part and the query."""
    assert list(got) == list(want)
    for key, parts in want.items():
        for part, value in parts.items():
            if part == "search":
                for query, hits in value.items():
                    assert got[key][part][query] == hits, (key, query)
            else:
                assert got[key][part] == value, (key, part)
    assert got == want


def _memory(server: ScriptedLLMServer, minilm, graph_store: dict[str, Any]) -> Memory:
    return Memory(
        {
            "llm": {"base_url": server.base_url, "api_key": "test", "max_retries": 0},
            "graph_store": graph_store,
            "memory": {"summary_every": 100},
        },
        embedder=minilm,
    )


@pytest.mark.neo4j
@pytest.mark.parametrize("part_records", [10_000, 3])  # 3: every tenant written in parts
def test_round_trip_embedded_neo4j_embedded(tmp_path, llm_server, minilm, neo4j_server,
                                            neo4j_connect, part_records: int) -> None:  # fmt: skip
    for rule in _rules():
        llm_server.add_rule(rule)
    neo4j = {"provider": "neo4j", "url": neo4j_server.uri, "username": neo4j_server.user,
             "password": neo4j_server.password}  # fmt: skip
    with _memory(llm_server, minilm, {"provider": "embedded", "path": str(tmp_path / "a")}) as a:
        _fill(a)
        original, unscored = _state(a), _state(a, scores=False)
        assert a.export(tmp_path / "a.jsonl") == 3
    with _memory(llm_server, minilm, neo4j) as b:
        imported = b.import_archive(tmp_path / "a.jsonl", batch=2, part_records=part_records)
        assert [t.reembedded for t in imported] == [False] * 3
        _same(_state(b, scores=False), unscored)
        b.export(tmp_path / "b.jsonl")
    with _memory(llm_server, minilm, {"provider": "embedded", "path": str(tmp_path / "c")}) as c:
        assert [t.reembedded for t in c.import_archive(tmp_path / "b.jsonl")] == [False] * 3
        _same(_state(c), original)
        helper = {"user_id": "alice", "agent_id": "helper"}
        (merge,) = [e for e in entity_events(c.store, Tenant(**helper)) if e.event == "MERGE"]
        split = c.split_entity(merge.id, **helper)  # the restored merge can be taken back
        assert split.restored.name == "Bob"
        names = sorted(e.name for e in c.get_all(**helper).entities)
        assert names == ["Acme", "Alice", "Bob"]


@pytest.mark.neo4j
def test_a_neo4j_tenant_read_in_one_statement_equals_its_separate_reads(
    tmp_path, llm_server, minilm, neo4j_server, neo4j_connect, monkeypatch
) -> None:
    """An export read each Neo4j tenant by eight statements, which cost the client about a
    millisecond of driver work each (most of an export of many small tenants); now by one,
    `archive_tenant`. It returns what the eight return, in their order, with and without
    embeddings, on tenants holding every kind of record (an ended edge, a changed and a
    deleted fact, a merge, a possible duplicate, a summary). A tenant of more records than
    `ONE_READ_RECORDS` (collected in the server's heap) is read by the separate reads, which
    stream. The embedded store has no such read, and its export makes the separate reads."""
    for rule in _rules():
        llm_server.add_rule(rule)
    with _memory(llm_server, minilm, {"provider": "embedded", "path": str(tmp_path / "a")}) as a:
        _fill(a)
        a.export(tmp_path / "a.jsonl")
        assert tenant_records(a.store, Tenant(user_id="alice"), embeddings=True) is None
    neo4j = {"provider": "neo4j", "url": neo4j_server.uri, "username": neo4j_server.user,
             "password": neo4j_server.password}  # fmt: skip
    with _memory(llm_server, minilm, neo4j) as b:
        b.import_archive(tmp_path / "a.jsonl")
        kinds: dict[str, int] = {}
        for tenant in b.tenants():
            for embeddings in (True, False):
                one = tenant_records(b.store, tenant, embeddings=embeddings)
                assert one is not None
                apart = _separately(b.store, tenant, embeddings)
                by_id = (one.entities, one.relations, apart.entities, apart.relations)
                for records in by_id:  # (neither read orders them: index order)
                    records.sort(key=lambda r: r.id)
                assert one == apart
                for field, value in one._asdict().items():
                    kinds[field] = kinds.get(field, 0) + (len(value) if isinstance(value, list)
                                                          else value is not None)  # fmt: skip
            assert any(r.embedding for r in tenant_records(b.store, tenant, embeddings=True)
                       .entities)  # fmt: skip
        assert all(kinds.values()), kinds  # every kind of record was read and compared
        assert kinds["relations"] > kinds["entities"] / 4

        def read_all() -> dict[Tenant, Any]:  # entities and edges in id order (see above)
            out = {t: read_tenant(b.store, t) for t in b.tenants()}
            for a in out.values():
                a.entities.sort(key=lambda e: e.id)
                a.relations.sort(key=lambda r: r.id)
            return out

        whole = read_all()
        sizes = {t: sum(map(len, (a.entities, a.relations, a.episodes, a.fact_events)))
                 for t, a in whole.items()}  # fmt: skip
        monkeypatch.setattr("mem0g.stores.archive_reads.ONE_READ_RECORDS", min(sizes.values()))
        big = [t for t in whole if tenant_records(b.store, t, embeddings=True) is None]
        assert big == [t for t, n in sizes.items() if n > min(sizes.values())] and big
        assert read_all() == whole


@pytest.fixture
def filled(tmp_path, llm_server, minilm) -> tuple[Memory, Path]:
    for rule in _rules():
        llm_server.add_rule(rule)
    m = _memory(llm_server, minilm, {"provider": "embedded", "path": str(tmp_path / "src")})
    _fill(m)
    archive = tmp_path / "backup.jsonl"
    m.export(archive)
    yield m, archive
    m.close()


def _fresh(tmp_path, llm_server, minilm, name: str = "dst") -> Memory:
    return _memory(llm_server, minilm, {"provider": "embedded", "path": str(tmp_path / name)})


def test_the_archive_holds_the_whole_history(filled) -> None:
    _, archive = filled
    lines = [json.loads(line) for line in archive.read_text().splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["version"] == VERSION
    assert lines[0]["embedder"] and lines[0]["embeddings"] is True
    kinds = [line["kind"] for line in lines]
    assert kinds.count("tenant") == kinds.count("end") == 3 and kinds[-1] == "footer"
    assert kinds.count("duplicate") == 1
    events = [line["record"] for line in lines if line["kind"] == "fact_event"]
    assert {e["event"] for e in events} == {"ADD", "UPDATE", "DELETE"}
    relations = [line["record"] for line in lines if line["kind"] == "relation"]
    ended = [r for r in relations if r["invalid_at"]]
    assert [(r["destination"], r["provenance"] != []) for r in ended] == [("London", True)]
    assert all(len(r["embedding"]) == 384 for r in relations)


def test_a_version_1_archive_without_entity_history_still_imports(
    filled, tmp_path, llm_server, minilm
) -> None:
    source, archive = filled
    old = []
    for line in archive.read_text().splitlines():
        data = json.loads(line)
        if data["kind"] == "entity_event":
            continue  # version 1 wrote none
        if data["kind"] == "header":
            data["version"] = 1
        if data["kind"] == "end":
            data["counts"].pop("entity_event")
        old.append(json.dumps(data))
    assert len(old) < len(archive.read_text().splitlines())  # the merge's events were there
    v1 = tmp_path / "v1.jsonl"
    v1.write_text("\n".join(old) + "\n")
    with _fresh(tmp_path, llm_server, minilm) as target:
        assert len(target.import_archive(v1)) == 3
        helper = Tenant(user_id="alice", agent_id="helper")
        assert entity_events(target.store, helper) == []
        assert target.get_all(user_id="bob") == source.get_all(user_id="bob")


def test_an_entity_event_of_another_tenant_is_refused(filled, tmp_path, llm_server, minilm):
    """A restore's entity history is checked like its records: the tenant's own only, and
    nothing of the tenant is written otherwise."""
    _, archive = filled
    lines = archive.read_text().splitlines()
    moved = []
    for line in lines:
        data = json.loads(line)
        if data["kind"] == "entity_event":
            data["record"]["tenant"] = {"user_id": "mallory"}
        moved.append(json.dumps(data))
    forged = tmp_path / "forged.jsonl"
    forged.write_text("\n".join(moved) + "\n")
    with _fresh(tmp_path, llm_server, minilm) as target:
        with pytest.raises(ArchiveError, match="entity_event of another tenant"):
            target.import_archive(forged)
        helper = Tenant(user_id="alice", agent_id="helper")
        assert target.get_all(**helper.model_dump()).entities == []


@pytest.mark.parametrize("batch", [1, 10])
def test_import_refuses_an_existing_tenant_unless_merge(
    filled, tmp_path, llm_server, minilm, batch: int
) -> None:
    source, archive = filled
    with _fresh(tmp_path, llm_server, minilm) as target:
        target.add("I am someone else", user_id="bob", infer=False)
        before = target.get_all(user_id="bob")
        with pytest.raises(ArchiveError, match=r"already has data.*--merge"):
            target.import_archive(archive, batch=batch)
        assert target.get_all(user_id="bob") == before
        # tenants before the refused one were imported whole (also from a batch not yet
        # full); the rest were not started
        order = [t.key for t in source.tenants()]
        bob = order.index(Tenant(user_id="bob").key)
        assert {t.key for t in target.tenants()} == {*order[:bob], Tenant(user_id="bob").key}
        target.import_archive(archive, merge=True, batch=batch)
        texts = sorted(f.text for f in target.get_all(user_id="bob").facts)
        assert texts == ["I am someone else", "locker code 4521"]
        assert _state(target)['["alice", null, null]'] == _state(source)['["alice", null, null]']
        target.import_archive(archive, merge=True)  # everything is there: nothing added
        assert len(target.get_all(user_id="bob").facts) == 2


@pytest.mark.parametrize("batch", [1, 2])
def test_a_newer_or_broken_archive_is_refused_clearly(
    filled, tmp_path, llm_server, minilm, batch: int
) -> None:
    _, archive = filled
    lines = archive.read_text().splitlines()
    header = json.loads(lines[0])
    newer = json.dumps({**header, "version": VERSION + 1})
    cut = lines[: len(lines) // 2]
    with _fresh(tmp_path, llm_server, minilm) as target:
        with pytest.raises(ArchiveError, match=f"version {VERSION + 1}.*upgrade mem0g"):
            target.import_archive(io.StringIO("\n".join([newer, *lines[1:]])))
        with pytest.raises(ArchiveError, match="not a mem0g archive"):
            target.import_archive(io.StringIO('{"hello": 1}\n'))
        with pytest.raises(ArchiveError, match=r"incomplete|cut off"):
            target.import_archive(io.StringIO("\n".join(cut)), batch=batch)
        ended = [json.loads(line)["tenant"] for line in cut if '"kind": "end"' in line]
        assert [t.model_dump() for t in target.tenants()] == ended  # the whole ones only
    with _fresh(tmp_path, llm_server, minilm, "other") as target:
        other = [json.loads(line) for line in lines]
        tampered = max(i for i, d in enumerate(other) if d["kind"] == "relation")
        other[tampered]["record"]["source_id"] = "nobody"  # a store-level refusal
        owner = next(d["tenant"] for d in other[tampered:] if d["kind"] == "end")
        with pytest.raises(Exception, match="nobody"):
            target.import_archive(io.StringIO("\n".join(json.dumps(d) for d in other)),
                                  batch=batch)  # fmt: skip
        before = [d["tenant"] for d in other[:tampered] if d["kind"] == "end"]
        # the whole batches before the owner's (its own batch is refused whole)
        before = before[: len(before) // batch * batch]
        assert [t.model_dump() for t in target.tenants()] == before  # none of owner's
        assert owner not in before


BLANKS = [("fact", "text", ""), ("fact", "text", "  "), ("entity", "name", "")]


@pytest.mark.parametrize(("kind", "field", "value"), BLANKS)
def test_a_record_memory_never_stores_is_refused_by_import(
    filled, tmp_path, llm_server, minilm, kind: str, field: str, value: str
) -> None:
    """A hand-edited archive whose fact text (or entity name) was blank imported without a
    word: a record `Memory` itself never stores. It is refused, naming its line, and the
    tenant holding it is not imported."""
    _, archive = filled
    records = [json.loads(line) for line in archive.read_text().splitlines()]
    at = next(i for i, d in enumerate(records) if d["kind"] == kind)
    records[at]["record"][field] = value
    owner = next(d["tenant"] for d in records[at:] if d["kind"] == "end")
    with _fresh(tmp_path, llm_server, minilm) as target:
        with pytest.raises(ArchiveError, match=rf"line {at + 1}: a {kind}'s {field} is empty"):
            target.import_archive(io.StringIO("\n".join(json.dumps(d) for d in records)))
        assert owner not in [t.model_dump() for t in target.tenants()]


def test_import_re_embeds_for_another_model(filled, tmp_path, llm_server, hashing) -> None:
    _, archive = filled
    target = Memory(
        {"llm": {"base_url": llm_server.base_url, "api_key": "test"},
         "graph_store": {"provider": "embedded", "path": str(tmp_path / "h")}},
        embedder=hashing,
    )  # fmt: skip
    with target:
        imported = target.import_archive(archive)
        assert all(t.reembedded for t in imported)
        (fact,) = target.store.facts(target._tenant("bob", None, None))
        assert fact.embedding == pytest.approx(hashing.embed([fact.text])[0].tolist(), abs=1e-6)
        hits = target.search("locker code", user_id="bob")
        assert [f.text for f in hits.facts] == ["locker code 4521"]


def test_export_without_embeddings_then_import_embeds(filled, tmp_path, llm_server, minilm):
    source, _ = filled
    bare = tmp_path / "bare.jsonl"
    source.export(bare, user_id="alice", embeddings=False)
    lines = [json.loads(line) for line in bare.read_text().splitlines()]
    assert lines[0]["embeddings"] is False
    assert {line["tenant"]["agent_id"] for line in lines if line["kind"] == "tenant"} == {
        None, "helper"}  # fmt: skip
    with _fresh(tmp_path, llm_server, minilm) as target:
        assert all(t.reembedded for t in target.import_archive(bare))
        want = _state(source)
        got = _state(target)
        for key in got:
            assert got[key]["graph"] == want[key]["graph"]
            assert [h[0] for h in got[key]["search"]["London as of None"][0]] == [
                h[0] for h in want[key]["search"]["London as of None"][0]
            ]


def test_a_restore_in_parts_equals_the_restore_in_one(filled, tmp_path, llm_server, minilm):
    """`plan_parts` regroups a restore's plan so each part refers only to what the parts
    before it wrote: applied one by one (each passing the plan rules), parts of two records
    restore every tenant exactly as the one plan does (histories, the merge's undo record,
    the deleted fact, the pair, the summary)."""
    source, _ = filled
    want = _state(source)
    with _fresh(tmp_path, llm_server, minilm) as target:
        for tenant in source.tenants():
            part = read_tenant(source.store, tenant)
            plan = tenant_plan(target.store, part)
            parts = plan_parts(plan, 2)
            assert len(parts) > 3 and sum(map(plan_size, parts)) == plan_size(plan)
            for piece in parts:
                target.store.apply(piece)
            if part.summary is not None:
                target.store.set_summary(part.summary)
        _same(_state(target), want)


def _third_part_fails(target: Memory, monkeypatch: pytest.MonkeyPatch) -> list[WritePlan]:
    """The target restores in parts (as Neo4j does), and its third write fails; the writes
    are recorded in the list returned."""
    store = target.store
    monkeypatch.setattr(store, "capabilities", replace(store.capabilities,
                                                       restore_in_parts=True))  # fmt: skip
    real = store.apply
    calls: list[WritePlan] = []

    def failing_apply(plan: WritePlan) -> None:
        calls.append(plan)
        if len(calls) == 3:
            raise StoreError("the server went away")
        real(plan)

    monkeypatch.setattr(store, "apply", failing_apply)
    return calls


def test_a_restore_stopped_midway_says_which_parts_were_written(
    filled, tmp_path, llm_server, minilm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a store that restores in parts, a failure after the first part leaves the parts
    before it and names them, and how to start again."""
    _, archive = filled
    with _fresh(tmp_path, llm_server, minilm) as target:
        calls = _third_part_fails(target, monkeypatch)
        said = r"in part only \(2 of \d+ parts written\).*went away.*import the archive again"
        heard: list[tuple[Tenant, int, int]] = []
        with pytest.raises(StoreError, match=said), archive.open(encoding="utf-8") as lines:
            import_archive(target, lines, part_records=2,
                           part_progress=lambda *args: heard.append(args))  # fmt: skip
        assert len(calls) == 3
        parts = heard[0][2]
        assert heard == [(calls[0].tenant, 1, parts), (calls[0].tenant, 2, parts)]
        (written,) = target.tenants()  # the first tenant's first two parts, nothing else
        assert written == calls[0].tenant


def test_a_restore_stopped_midway_is_finished_by_a_merge_in_parts(
    filled, tmp_path, llm_server, minilm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge import was one transaction however many records it brought, so a large one
    failed on a server of small transaction memory, and a restore stopped midway could only
    be deleted and begun again. A merge's plan only creates records, so it is written in
    parts as a new tenant's is; the same import with merge then writes just what the parts
    before the failure lacked, and the store ends as a whole restore leaves it."""
    source, archive = filled
    want = _state(source)
    with _fresh(tmp_path, llm_server, minilm) as target:
        calls = _third_part_fails(target, monkeypatch)
        said = r"imported in part only.*went away.*import the archive again with --merge"
        with pytest.raises(StoreError, match=said), archive.open(encoding="utf-8") as lines:
            import_archive(target, lines, part_records=2)
        cut = calls[0].tenant
        heard: list[tuple[Tenant, int, int]] = []
        with archive.open(encoding="utf-8") as lines:
            imported = import_archive(target, lines, merge=True, part_records=2,
                                      part_progress=lambda *args: heard.append(args))  # fmt: skip
        assert [t.merged for t in imported if t.tenant == cut] == [True]
        assert max(n for t, _, n in heard if t == cut) > 1  # the merge, in parts
        _same(_state(target), want)


def test_whole_store_reads_read_a_user_once_and_each_tenant_exactly(make_memory, monkeypatch):
    """`get_everything` (`mem0g dump` without a tenant) read every tenant by its filter: a
    user of n runs was read n + 1 times whole (on Neo4j 89 s for one user of 4,000 runs,
    docs/benchmarks.md). It reads one scope per user, and each tenant without a user
    exactly; a backup reads each tenant exactly. Each record comes back once."""
    m = make_memory(memory={"facts": True, "summary": False})
    for i in range(12):
        m.add(f"Session {i}: I met Person{i}.", user_id="u", run_id=f"run-{i}", infer=False)
    m.add("I am u", user_id="u", infer=False)
    m.add("Bob likes jazz", user_id="bob", infer=False)
    m.add("The bot ran", agent_id="bot", run_id="r1", infer=False)
    m.add("The bot ran again", agent_id="bot", run_id="r2", infer=False)
    m.add("A run alone", run_id="solo", infer=False)
    tenants = m.tenants()
    assert len(tenants) == 17
    each = [f for t in tenants for f in m.store.facts(t) if f.tenant == t]
    assert len(each) == 17
    reads: list[tuple[Tenant, bool]] = []
    snapshot = m.store.snapshot

    def counted(scope: Tenant, validity: Any, **kw: Any) -> Any:
        reads.append((scope, kw.get("exact", False)))
        return snapshot(scope, validity, **kw)

    def one_read(store: Any, tenant: Tenant, **kw: Any) -> Any:
        read = tenant_records(store, tenant, **kw)  # Neo4j: an exact tenant in one statement
        if read is not None:
            reads.append((tenant, True))
        return read

    monkeypatch.setattr(m.store, "snapshot", counted)
    monkeypatch.setattr("mem0g.archive.tenant_records", one_read)
    everything = m.get_everything()
    assert sorted(f.id for f in everything.facts) == sorted(f.id for f in each)
    assert sorted(reads, key=lambda r: r[0].key) == sorted(
        [(Tenant(user_id="u"), False), (Tenant(user_id="bob"), False)]
        + [(t, True) for t in tenants if t.user_id is None],
        key=lambda r: r[0].key,
    )
    reads.clear()
    out = io.StringIO()
    assert m.export(out) == 17
    assert sorted(reads, key=lambda r: r[0].key) == [(t, True) for t in tenants]
    ends = [line for line in map(json.loads, out.getvalue().splitlines()) if line["kind"] == "end"]
    assert [(e["counts"]["fact"], e["counts"]["episode"]) for e in ends] == [(1, 1)] * 17
