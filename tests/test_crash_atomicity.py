"""Crash atomicity of the embedded store: a writer process is SIGKILLed at random times and at
chosen SQL statements while it adds (through the LLM, the scripted TEST DOUBLE server, and
verbatim), merges and splits entities, and updates and deletes facts. After every kill the
store is reopened and each operation is all there or not there at all: an add's episode with
every entity, edge, fact, fact event and link it wrote, or none of them; a merge, a split, a
fact update or delete with all of its rows or none. The derived state is checked against a
recomputation (the FTS5 tables and BM25 counts, `stats`, `fact_vector_sum`), the file passes
SQLite's integrity check, and the store takes further writes and searches.

A writer is forked from a forkserver that has mem0g imported already, so a kill costs
milliseconds instead of a second of imports. Every operation is journalled by the writer
before it starts ("B") and after it returned ("D"): a D operation must be in the store, an
operation never begun must not, one begun but not done may be either, never half.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.util
import os
import random
import signal
import sqlite3
import string
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mem0g import Memory
from mem0g.config import EmbedderConfig, MemoryConfig
from mem0g.embed import make_embedder
from mem0g.stores import EmbeddedGraphStore
from mem0g.stores.embedded import bm25, lexical
from mem0g.testing import ScriptedLLMServer
from mem0g.types import Tenant, Validity

ALICE, BOB = Tenant(user_id="alice"), Tenant(user_id="bob")
# one cycle of operations: the writer runs OPS[k % len(OPS)] as operation k
OPS = ("llm", "verbatim", "merge", "llm", "update", "delete", "split", "verbatim")
ROUNDS = int(os.environ.get("MEM0G_CRASH_ROUNDS", "36"))
MAX_OPS = 40 * ROUNDS  # never reached: every round ends in its kill (a few hundred ops in all)


def tag(k: int) -> str:
    """Operation k's marker: six letters, in every name and text the operation writes."""
    rng = random.Random(7919 * k + 17)
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(6))


def parent_word(round_: int) -> str:
    """The word the checks' own add after a kill carries (a test asserts it holds no tag)."""
    return "plover" + "".join(string.ascii_lowercase[int(d)] for d in f"{round_:03d}")


def names(t: str) -> dict[str, str]:
    return {"per": f"Per{t}", "ann": f"Ann{t}", "org": f"Org{t}", "cit": f"Cit{t}"}


# ---------------------------------------------------------------- the scripted LLM


def _tag_in(payload: dict[str, Any]) -> str:
    for message in payload.get("messages", []):
        content = message.get("content", "")
        if content.startswith("Note "):
            return str(content[5:11])
    raise AssertionError(f"no marker in {payload}")


def _entities(payload: dict[str, Any]) -> dict[str, Any]:
    n = names(_tag_in(payload))
    return {
        "entities": [
            {"name": "Alice", "type": "person"},
            {"name": n["per"], "type": "person"},
            {"name": n["ann"], "type": "person"},
            {"name": n["org"], "type": "organization"},
            {"name": n["cit"], "type": "city"},
        ]
    }


def _relations(payload: dict[str, Any]) -> dict[str, Any]:
    n = names(_tag_in(payload))
    triples = [
        ("Alice", "knows", n["per"]),
        ("Alice", "knows", n["ann"]),
        (n["per"], "is_friend_of", n["ann"]),
        (n["per"], "works_at", n["org"]),
        (n["ann"], "works_at", n["org"]),
        (n["org"], "located_in", n["cit"]),
    ]
    return {
        "relations": [
            {"source": s, "relation": r, "destination": d, "valid_from": None}
            for s, r, d in triples
        ]
    }


def _facts(payload: dict[str, Any]) -> dict[str, Any]:
    n = names(_tag_in(payload))
    return {"facts": [f"{n['per']} works at {n['org']}", f"{n['org']} is located in {n['cit']}"]}


RULES: list[dict[str, Any]] = [
    {"task": "extract_entities", "response": _entities},
    {"task": "establish_relations", "response": _relations},
    {"task": "extract_facts", "response": _facts},
    {"task": "resolve_updates", "response": {"operations": []}},  # add every new edge
    {"task": "update_memory", "response": {"operations": []}},  # add every new fact
    {"task": "summarize", "response": {"summary": "Alice knows people."}},
]
LLM_LINES = 6  # relations an LLM add writes
LLM_FACTS = 2
VERBATIM_FACTS = 3


def config(path: Path, base_url: str) -> dict[str, Any]:
    return {
        "llm": {"base_url": base_url, "api_key": "test", "max_retries": 0},
        "graph_store": {"provider": "embedded", "path": str(path)},
        # the summary is refreshed in the background after each 4 messages: its own
        # transaction, killed too now and then
        "memory": {"summary": True, "summary_every": 4},
    }


# ---------------------------------------------------------------- the writer (child)


def _journal(journal: Path) -> list[dict[str, Any]]:
    if not journal.exists():
        return []
    lines = journal.read_text().splitlines()
    # a kill may cut the last line short: it was never written, as far as anyone knows
    return [json.loads(line) for line in lines if line.endswith("}")]


def _next_op(entries: list[dict[str, Any]]) -> int:
    return max((e["k"] for e in entries), default=-1) + 1


def _pick(entries: list[dict[str, Any]], kind: str, used_kind: str, used_key: str) -> Any:
    """The newest done `kind` operation no `used_kind` operation has taken yet."""
    begun = {e["k"]: e for e in entries if e["s"] == "B"}
    used = {begun[e["k"]]["args"].get(used_key) for e in entries
            if e["s"] == "B" and e["kind"] == used_kind}  # fmt: skip
    done = [e for e in entries if e["s"] == "D" and e["kind"] == kind and e["k"] not in used]
    return done[-1] if done else None


def _run_op(
    memory: Memory, k: int, entries: list[dict[str, Any]]
) -> tuple[dict[str, Any], Any] | None:
    """Operation k's (args, callable), or None when it has nothing to work on."""
    kind, t = OPS[k % len(OPS)], tag(k)
    if kind == "llm":
        text = f"Note {t}: {names(t)['per']} and {names(t)['ann']} work at {names(t)['org']}."

        def llm() -> Any:
            result = memory.add(
                [{"role": "user", "name": "Alice", "content": text}], user_id="alice"
            )
            return {
                "episode": result.episode_id,
                "entities": {e.name: e.id for e in result.entities},
            }

        return {"tag": t}, llm
    if kind == "verbatim":
        texts = [f"Verbatim {t} number {i} about gardens" for i in range(VERBATIM_FACTS)]

        def verbatim() -> Any:
            result = memory.add([{"role": "user", "content": x} for x in texts], user_id="bob",
                                infer=False)  # fmt: skip
            return {"episode": result.episode_id, "facts": [f.id for f in result.facts]}

        return {"tag": t}, verbatim
    if kind == "merge":
        target = _pick(entries, "llm", "merge", "of")
        if target is None:
            return None
        ids, n = target["result"]["entities"], names(target["args"]["tag"])
        args = {"of": target["k"], "keep": ids[n["per"]], "other": ids[n["ann"]]}

        def merge() -> Any:
            return {"merge_id": memory.merge_entities(args["keep"], args["other"],
                                                      user_id="alice").merge_id}  # fmt: skip

        return args, merge
    if kind == "split":
        target = _pick(entries, "merge", "split", "of")
        if target is None:
            return None
        args = {"of": target["k"], "merge_id": target["result"]["merge_id"],
                "other": target["args"]["other"]}  # fmt: skip

        def split() -> Any:
            return {"split_id": memory.split_entity(args["merge_id"], user_id="alice").split_id}

        return args, split
    target = _pick(entries, "verbatim", kind, "of")
    if target is None:
        return None
    fact_id = target["result"]["facts"][0 if kind == "update" else 1]
    args = {"of": target["k"], "fact": fact_id, "tag": t}
    if kind == "update":
        return args, lambda: memory.update(fact_id, f"Revised {t} text about roses",
                                           user_id="bob").model_dump()  # fmt: skip
    return args, lambda: memory.delete(fact_id, user_id="bob").model_dump()


def writer(path: str, base_url: str, journal: str, kill_at: int, ready: Any) -> None:
    """One writer process: runs operations from where the journal ends until MAX_OPS or
    SIGKILL; with `kill_at` > 0 it kills itself at that SQL statement of its own (counted from
    its first operation's), the statement not run."""
    log = Path(journal)
    entries = _journal(log)
    embedder = make_embedder(EmbedderConfig(provider="hashing"))
    memory = Memory(config(Path(path), base_url), embedder=embedder)
    store = memory.store
    assert isinstance(store, EmbeddedGraphStore)
    conn = store._connection()
    counted = [0]

    def trace(statement: str) -> None:
        counted[0] += 1
        if counted[0] == kill_at:
            with Path(journal).with_suffix(".killed").open("a") as out:
                out.write(" ".join(statement.split())[:60] + "\n")
            os.kill(os.getpid(), signal.SIGKILL)

    if kill_at > 0:
        conn.set_trace_callback(trace)
    ready.send("ready")
    k = _next_op(entries)
    with log.open("a", buffering=1) as out:  # a line reaches the file when it is written
        while k < MAX_OPS:
            found = _run_op(memory, k, entries)
            kind = OPS[k % len(OPS)]
            if found is None:
                entry = {"k": k, "s": "S", "kind": kind}
                out.write(json.dumps(entry) + "\n")
                entries.append(entry)
                k += 1
                continue
            args, run = found
            begun = {"k": k, "s": "B", "kind": kind, "args": args}
            out.write(json.dumps(begun) + "\n")
            entries.append(begun)
            result = run()
            done = {"k": k, "s": "D", "kind": kind, "args": args, "result": result}
            out.write(json.dumps(done) + "\n")
            entries.append(done)
            k += 1
    memory.close()


# ---------------------------------------------------------------- the checks (parent)


def _rows(conn: sqlite3.Connection, sql: str, *params: Any) -> list[sqlite3.Row]:
    return conn.execute(sql, params).fetchall()


def check_raw(db: Path) -> None:
    """Before the store opens (which would rebuild an FTS table out of step): the file as the
    kill left it, after SQLite's own WAL recovery."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for table, check in lexical._CHECK.items():
            base, indexed, paired = conn.execute(check).fetchone()
            assert base == indexed == paired, (table, base, indexed, paired)
            assert bm25.in_step(conn, table), f"BM25 counts of {table} out of step"
    finally:
        conn.close()


class State:
    """The store's rows, read once per check."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        conn.row_factory = sqlite3.Row
        self.episodes = {r["id"]: r for r in _rows(conn, "SELECT * FROM episodes")}
        self.entities = {r["id"]: r for r in _rows(conn, "SELECT * FROM entities")}
        self.relations = {r["id"]: r for r in _rows(conn, "SELECT * FROM relations")}
        self.facts = {r["id"]: r for r in _rows(conn, "SELECT * FROM facts")}
        self.fact_events = _rows(conn, "SELECT * FROM fact_events ORDER BY rowid")
        events = _rows(conn, "SELECT data FROM entity_events ORDER BY rowid")
        self.entity_events = [json.loads(r["data"]) for r in events]
        self.links = _rows(conn, "SELECT * FROM fact_links")

    def episode_with(self, t: str) -> list[str]:
        return [i for i, r in self.episodes.items() if t in r["messages"]]

    def mentioning(self, t: str) -> list[str]:
        """Every row naming marker t, whatever table."""
        found = [f"episode {i}" for i in self.episode_with(t)]
        found += [f"entity {r['name']}" for r in self.entities.values()
                  if t in r["name"] or t in r["aliases"]]  # fmt: skip
        found += [
            f"relation {r['source']} {r['relation']} {r['destination']}"
            for r in self.relations.values()
            if t in r["source"] + r["destination"]
        ]
        found += [f"fact {r['text']}" for r in self.facts.values() if t in r["text"]]
        found += [f"fact event {r['event']} {r['new_text']}" for r in self.fact_events
                  if t in (r["new_text"] or "")]  # fmt: skip
        return found

    def with_provenance(self, table: dict[str, sqlite3.Row], episode: str) -> list[str]:
        return [
            i
            for i, r in table.items()
            if any(p["episode_id"] == episode for p in json.loads(r["provenance"]))
        ]


def _merged_away(state: State, entity_id: str) -> bool:
    """The entity was merged away by a merge not split since."""
    merges = [e["id"] for e in state.entity_events if e["event"] == "MERGE"
              and e["other_id"] == entity_id]  # fmt: skip
    splits = {e["merge_id"] for e in state.entity_events if e["event"] == "SPLIT"}
    return any(m not in splits for m in merges)


def check_ops(state: State, entries: list[dict[str, Any]]) -> dict[str, int]:
    """Each journalled operation all there or not at all; returns how many of each status."""
    begun = {e["k"]: e for e in entries if e["s"] == "B"}
    done = {e["k"] for e in entries if e["s"] == "D"}
    seen = {"done": 0, "in doubt, there": 0, "in doubt, not there": 0}
    for k, entry in begun.items():
        there = _check_op(state, entry)
        if k in done:
            assert there, f"operation {entry} returned but is not in the store"
            seen["done"] += 1
        else:
            seen["in doubt, there" if there else "in doubt, not there"] += 1
    last = max(begun, default=-1)
    for k in range(last + 1, last + 9):  # never begun: not a trace of them
        if OPS[k % len(OPS)] in ("llm", "verbatim"):
            assert not state.mentioning(tag(k)), (k, state.mentioning(tag(k)))
    return seen


def _check_op(state: State, entry: dict[str, Any]) -> bool:
    kind, args = entry["kind"], entry["args"]
    if kind in ("llm", "verbatim"):
        t = args["tag"]
        episodes = state.episode_with(t)
        if not episodes:
            assert not state.mentioning(t), (entry, state.mentioning(t))
            return False
        (episode,) = episodes
        events = [r for r in state.fact_events if r["episode_id"] == episode]
        facts = state.with_provenance(state.facts, episode)
        deleted = {r["fact_id"] for r in state.fact_events if r["event"] == "DELETE"}
        if kind == "verbatim":
            assert [r["event"] for r in events] == ["ADD"] * VERBATIM_FACTS, entry
            assert len(facts) == VERBATIM_FACTS - len({r["fact_id"] for r in events} & deleted)
            return True
        assert [r["event"] for r in events] == ["ADD"] * LLM_FACTS, entry
        assert len(facts) == LLM_FACTS, entry
        by_name = {r["name"]: i for i, r in state.entities.items() if t in r["name"]}
        n = names(t)
        assert {n["per"], n["org"], n["cit"]} <= set(by_name), (entry, by_name)
        ann = n["ann"] in by_name
        lines = state.with_provenance(state.relations, episode)
        if ann:
            assert len(lines) == LLM_LINES, (entry, len(lines))
        else:  # merged into Per: the friend_of edge between them went with the merge
            per = state.entities[by_name[n["per"]]]
            assert n["ann"] in json.loads(per["aliases"]), entry
            assert len(lines) == LLM_LINES - 1, (entry, len(lines))
        return True
    if kind in ("merge", "split"):
        other = args["other"]
        merges = [e for e in state.entity_events if e["event"] == "MERGE"
                  and e["other_id"] == other]  # fmt: skip
        splits = [e for e in state.entity_events if e["event"] == "SPLIT"]
        if kind == "split":
            there = any(e["merge_id"] == args["merge_id"] for e in splits)
            assert there == (other in state.entities), entry
            return there
        assert len(merges) <= 1, entry
        if not merges:
            assert other in state.entities, entry
            return False
        split = any(e["merge_id"] == merges[0]["id"] for e in splits)
        assert (other in state.entities) == split, entry
        if not split:
            assert not [r for r in state.relations.values()
                        if other in (r["source_id"], r["destination_id"])], entry  # fmt: skip
        return True
    fact, t = args["fact"], args["tag"]
    events = [r["event"] for r in state.fact_events if r["fact_id"] == fact]
    if kind == "delete":
        there = "DELETE" in events
        assert there == (fact not in state.facts), (entry, events)
        if there:
            assert not [r for r in state.links if r["fact_id"] == fact], entry
        return there
    updates = [r for r in state.fact_events if r["event"] == "UPDATE" and t in r["new_text"]]
    if not updates:
        assert not state.mentioning(t), entry
        return False
    row = state.facts.get(fact)
    assert (row is None and "DELETE" in events) or (row is not None and t in row["text"]), entry
    return True


def check_global(state: State) -> None:
    for r in state.relations.values():
        assert r["source_id"] in state.entities, dict(r)
        assert r["destination_id"] in state.entities, dict(r)
    for r in state.links:
        assert r["fact_id"] in state.facts and r["entity_id"] in state.entities, dict(r)
    for table in (state.relations, state.facts):
        for r in table.values():
            for p in json.loads(r["provenance"]):
                assert p["episode_id"] in state.episodes, dict(r)
    for r in state.fact_events:
        assert r["episode_id"] is None or r["episode_id"] in state.episodes, dict(r)


def _unit_sum(rows: list[sqlite3.Row]) -> np.ndarray:
    vectors = [np.frombuffer(r["embedding"], dtype=np.float32).astype(np.float64) for r in rows]
    total: np.ndarray = np.sum([v / np.linalg.norm(v) for v in vectors], axis=0)
    return total


def check_kept(store: EmbeddedGraphStore, state: State) -> None:
    """What the store keeps counted and summed equals a recomputation from the rows."""
    for tenant in (ALICE, BOB):
        key = tenant.key
        stats = store.stats(tenant)
        counts = {
            name: len([r for r in rows.values() if r["tenant_key"] == key])
            for name, rows in (("entities", state.entities), ("relations", state.relations),
                               ("episodes", state.episodes), ("facts", state.facts))
        }  # fmt: skip
        assert (stats.entities, stats.relations, stats.episodes, stats.facts) == (
            counts["entities"], counts["relations"], counts["episodes"], counts["facts"]
        ), counts  # fmt: skip
        facts = [r for r in state.facts.values() if r["tenant_key"] == key]
        kept = store.fact_vector_sum(tenant)
        if facts:
            assert kept is not None
            np.testing.assert_allclose(kept, _unit_sum(facts), atol=1e-4)
        assert {f.id for f in store.facts(tenant)} == {r["id"] for r in facts}


def check_store(
    path: Path, journal: Path, server: ScriptedLLMServer, round_: int
) -> dict[str, int]:
    """Everything after one kill; then a further add, update and search on the store."""
    db = path / "graph.db"
    if not db.exists():
        return {}
    check_raw(db)
    started = time.monotonic()
    embedder = make_embedder(EmbedderConfig(provider="hashing"))
    memory = Memory(config(path, server.base_url), embedder=embedder)
    assert time.monotonic() - started < 5.0, "reopening after the kill waited"
    try:
        store = memory.store
        assert isinstance(store, EmbeddedGraphStore)
        state = State(sqlite3.connect(db))
        check_global(state)
        seen = check_ops(state, _journal(journal))
        check_kept(store, state)
        # the store works: a verbatim add, an update of it and searches
        t = parent_word(round_)
        added = memory.add(f"Parent {t} checks the garden", user_id="bob", infer=False)
        memory.update(added.facts[0].id, f"Parent {t} checked the garden", user_id="bob")
        found = memory.search(f"Parent {t} checked", user_id="bob")
        assert any(t in f.text for f in found.facts), found
        state = State(sqlite3.connect(db))
        check_kept(store, state)  # kept in step by this process's writes too
        memory.search("Alice knows", user_id="alice")
    finally:
        memory.close()
    doctor(path)
    return seen


def doctor(path: Path) -> None:
    """`mem0g doctor`'s store check, in this process."""
    from mem0g.cli.store import _store_check

    checks: list[tuple[str, str, str]] = []
    settings = MemoryConfig.load({"graph_store": {"provider": "embedded", "path": str(path)}})
    dims = make_embedder(EmbedderConfig(provider="hashing")).dims
    _store_check(settings, dims, lambda *c: checks.append(c))
    assert [c[1] for c in checks] == ["ok"], checks


# ---------------------------------------------------------------- the test


@pytest.fixture(scope="module")
def forkserver() -> Iterator[Any]:
    """Writers forked from a process that has imported mem0g (and this module) already."""
    # multiprocessing's own temp directory (the forkserver's socket) is removed when the
    # interpreter exits: put it beside the suite's temp directory, which conftest removes first
    default, tempfile.tempdir = tempfile.tempdir, str(Path(tempfile.gettempdir()).parent)
    try:
        multiprocessing.util.get_temp_dir()
    finally:
        tempfile.tempdir = default
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["mem0g", "mem0g.memory", "test_crash_atomicity"])
    yield ctx


def _kill_round(ctx: Any, path: Path, base_url: str, journal: Path, rng: random.Random,
                round_: int) -> str:  # fmt: skip
    """One writer, killed at a random statement (even rounds) or after a random time."""
    kill_at = rng.randint(1, 400) if round_ % 2 == 0 else 0
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=writer, args=(str(path), base_url, str(journal), kill_at, theirs))
    proc.start()
    try:
        if not ours.poll(30):
            proc.join(5)
            raise AssertionError(f"writer not ready (exit code {proc.exitcode})")
        ours.recv()
        if kill_at == 0:
            time.sleep(rng.uniform(0.0, 1.2))
            proc.kill()  # SIGKILL
        proc.join(60)
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()
    if proc.exitcode == -signal.SIGKILL:
        return f"statement {kill_at}" if kill_at else "timer"
    assert proc.exitcode == 0, f"writer failed (exit code {proc.exitcode})"
    return "finished"


def test_kills_leave_every_operation_whole(tmp_path: Path, forkserver: Any) -> None:
    tags = [tag(k) for k in range(MAX_OPS + 16)]
    assert len(set(tags)) == len(tags)
    words = [w for t in tags for w in names(t).values()]
    words += [parent_word(r) + " Parent checks checked the garden" for r in range(ROUNDS)]
    assert not [(t, w) for t in tags for w in words if t in w and not w.endswith(t)]
    path, journal = tmp_path / "graph", tmp_path / "journal.jsonl"
    rng = random.Random(20240611)
    kills: list[str] = []
    seen: dict[str, int] = {}
    with ScriptedLLMServer(RULES) as server:
        for round_ in range(ROUNDS):
            kills.append(_kill_round(forkserver, path, server.base_url, journal, rng, round_))
            seen = check_store(path, journal, server, round_) or seen
        assert not server.unmatched, server.unmatched[:1]
    entries = _journal(journal)
    at = journal.with_suffix(".killed").read_text().splitlines()
    print("kills:", kills, "operations:", seen, "statements killed at:", at)
    assert kills.count("finished") <= ROUNDS // 4, kills  # most rounds ended in a kill
    done_kinds = {e["kind"] for e in entries if e["s"] == "D"}
    assert done_kinds == set(OPS), done_kinds  # every kind of operation ran
    assert seen["in doubt, there"] + seen["in doubt, not there"] > 0, seen


# ---------------------------------------------------------------- errors, in one process


def _snapshot(memory: Memory, db: Path) -> tuple[Any, ...]:
    """What the live store serves (memory) and what its file holds (SQL), for both tenants."""
    store = memory.store
    served = []
    for tenant in (ALICE, BOB):
        graph = store.snapshot(tenant, Validity(include_invalid=True))
        total = store.fact_vector_sum(tenant)
        served.append((
            store.stats(tenant),
            sorted((e.id, e.name, tuple(e.aliases)) for e in graph.entities),
            sorted((r.id, r.source_id, r.destination_id, r.mentions) for r in graph.relations),
            sorted((f.id, f.text) for f in store.facts(tenant)),
            [(event.id, event.event) for event, _ in store.fact_timeline(tenant)],
            None if total is None else np.round(total, 5).tolist(),
        ))  # fmt: skip
    conn = sqlite3.connect(db)
    try:
        tables = ("episodes", "entities", "relations", "facts", "fact_events", "entity_events",
                  "fact_links", "possible_duplicates", "tenant_versions")  # fmt: skip
        rows = tuple(sorted(map(tuple, conn.execute(f"SELECT * FROM {t}"))) for t in tables)
    finally:
        conn.close()
    return tuple(served), rows


class Injected(Exception):
    pass


def _fail(*args: Any, **kwargs: Any) -> None:
    raise Injected


def test_an_error_late_in_a_write_leaves_store_and_memory_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception at the last statement of each kind of write (after its other rows were
    written in the transaction): nothing in the file, nothing in the live store's memory,
    and the same write succeeds afterwards."""
    from mem0g.stores.embedded import links, repairs

    path = tmp_path / "graph"
    db = path / "graph.db"
    embedder = make_embedder(EmbedderConfig(provider="hashing"))
    with ScriptedLLMServer(RULES) as server, \
            Memory(config(path, server.base_url), embedder=embedder) as memory:  # fmt: skip
        memory.config.memory.summary = False  # no background write between the snapshots
        first = memory.add("Note abcdef: Perabcdef and Annabcdef work.", user_id="alice")
        ids = {e.name: e.id for e in first.entities}
        two = [{"role": "user", "content": x} for x in ("Verbatim a", "Verbatim b")]
        verbatim = memory.add(two, user_id="bob", infer=False)
        fact = verbatim.facts[0].id
        merge_id: list[str] = []
        writes: list[tuple[str, Any, Any]] = [
            (
                "llm add",
                lambda: memory.add("Note ghijkl: Perghijkl and Annghijkl.", user_id="alice"),
                (links, "write"),
            ),
            (
                "verbatim add",
                lambda: memory.add("Verbatim c", user_id="bob", infer=False),
                (links, "write"),
            ),
            (
                "update",
                lambda: memory.update(fact, "Verbatim a again", user_id="bob"),
                (links, "write"),
            ),
            (
                "merge",
                lambda: merge_id.append(
                    memory.merge_entities(
                        ids["Perabcdef"], ids["Annabcdef"], user_id="alice"
                    ).merge_id
                ),
                (repairs, "_write_entity_event"),
            ),
            (
                "split",
                lambda: memory.split_entity(merge_id[0], user_id="alice"),
                (repairs, "_write_entity_event"),
            ),
            ("delete", lambda: memory.delete(fact, user_id="bob"), (links, "write")),
        ]
        for what, write, (module, name) in writes:
            before = _snapshot(memory, db)
            with monkeypatch.context() as patch:
                patch.setattr(module, name, _fail)
                with pytest.raises(Injected):
                    write()
            assert _snapshot(memory, db) == before, what
            write()
            assert _snapshot(memory, db) != before, what
        served = _snapshot(memory, db)
    with Memory(config(path, "http://127.0.0.1:9/v1"), embedder=embedder) as reopened:
        assert _snapshot(reopened, db) == served  # memory was what the file holds
