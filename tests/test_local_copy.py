"""The client-held copy of Neo4j tenants (`graph_store.local_copy`, memory/copy.py, issue #18):
a search of a scope the copy holds at the server's versions is answered from it after one
read; any write, delete or merge makes Neo4j answer until the copy has caught up; the copy
survives a reopen. The LLM is the scripted TEST DOUBLE server; embeddings are real MiniLM."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_archive import QUERIES, T1, _fill, _rules

import mem0g.archive
from mem0g import Memory
from mem0g.memory.copy import LocalCopy
from mem0g.testing import ScriptedLLMServer
from mem0g.types import Tenant

pytestmark = pytest.mark.neo4j

SCOPES = [{"user_id": "alice"}, {"user_id": "alice", "agent_id": "helper"}, {"user_id": "bob"}]


SEARCH_READS = {"walk", "find_entities", "similar_relations_index", "similar_relations_scan",
                "similar_facts_index", "similar_facts_scan", "lexical_facts"}  # fmt: skip


def _memory(
    server: ScriptedLLMServer,
    minilm: Any,
    neo4j_server: Any,
    copy: Path | None,
    tenants: int = 100,
    **graph_store: Any,
) -> Memory:
    graph = {"provider": "neo4j", "url": neo4j_server.uri, "username": neo4j_server.user,
             "password": neo4j_server.password, "local_copy_tenants": tenants,
             "local_copy": None if copy is None else str(copy), **graph_store}  # fmt: skip
    llm = {"base_url": server.base_url, "api_key": "test", "max_retries": 0}
    config = {"llm": llm, "graph_store": graph, "memory": {"summary_every": 100}}
    return Memory(config, embedder=minilm)


def _answers(m: Memory, **ids: str) -> list[Any]:
    """Each query's hits and their order (scores aside: BM25 is each engine's own)."""
    out = []
    for query in QUERIES:
        hits = m.search(query, **ids, limit=5)
        out.append(([(r.id, r.source, r.relation, r.destination) for r in hits.relations],
                    [(f.id, f.text) for f in hits.facts],
                    [(e.id, e.name) for e in hits.entities]))  # fmt: skip
    return out


class Reads:
    """The statements a store reads while counting."""

    def __init__(self, store: Any) -> None:
        self.store, self.names = store, []
        real = store._read

        def read(name: str, params: dict[str, Any]) -> Any:
            self.names.append(name)
            return real(name, params)

        store._read = read

    def take(self) -> list[str]:
        names, self.names = self.names, []
        return names


@pytest.fixture
def filled(
    tmp_path: Path, llm_server: ScriptedLLMServer, minilm: Any, neo4j_server: Any,
    neo4j_connect: Any,
) -> Iterator[Memory]:  # fmt: skip
    for rule in _rules():
        llm_server.add_rule(rule)
    with _memory(llm_server, minilm, neo4j_server, tmp_path / "copy") as m:
        _fill(m)
        yield m


def test_a_copied_scope_is_answered_from_the_copy_after_one_read(
    filled: Memory, tmp_path: Path, llm_server: ScriptedLLMServer, minilm: Any,
    neo4j_server: Any,
) -> None:  # fmt: skip
    m = filled
    assert m.copy is not None
    with _memory(llm_server, minilm, neo4j_server, None) as plain:  # Neo4j's own answers
        want = {str(ids): _answers(plain, **ids) for ids in SCOPES}
    reads = Reads(m.store)
    m.search(QUERIES[0], user_id="alice")  # not copied yet: Neo4j answers, the copy starts
    assert SEARCH_READS & set(reads.take())
    for ids in SCOPES:
        m.copy.refresh(Tenant(**ids), wait=True)
    for ids in SCOPES:
        reads.take()
        assert _answers(m, **ids) == want[str(ids)]
        assert set(reads.take()) == {"scope_versions"}  # the copy answered
    shown = m.stats().local_copy  # what `stats` shows of it
    assert shown is not None and shown.tenants == 3
    assert shown.answered >= len(SCOPES) * len(QUERIES) and shown.declined >= 1
    # the copy survives a reopen: the first search needs no copying
    m.close()
    with _memory(llm_server, minilm, neo4j_server, tmp_path / "copy") as again:
        reads = Reads(again.store)
        for ids in SCOPES:
            assert _answers(again, **ids) == want[str(ids)]
        assert set(reads.take()) == {"scope_versions"}


def test_a_write_a_merge_or_a_delete_goes_to_neo4j_until_the_copy_catches_up(
    filled: Memory, llm_server: ScriptedLLMServer, minilm: Any, neo4j_server: Any
) -> None:
    m = filled
    assert m.copy is not None
    bob, alice = Tenant(user_id="bob"), Tenant(user_id="alice")
    for scope in (bob, alice):
        m.copy.refresh(scope, wait=True)
    reads = Reads(m.store)
    with _memory(llm_server, minilm, neo4j_server, None) as other:  # another client writes
        other.add("bike lock code 7788", user_id="bob", infer=False)
    texts = [f.text for f in m.search("lock code", user_id="bob").facts]
    assert "bike lock code 7788" in texts
    assert SEARCH_READS & set(reads.take())  # Neo4j answered: the copy was behind
    m.copy.refresh(bob, wait=True)
    reads.take()
    assert [f.text for f in m.search("lock code", user_id="bob").facts] == texts
    assert set(reads.take()) == {"scope_versions"}
    # this client's own write: the copy writes the same plan, and is current without copying
    m.add("gym locker code 1234", user_id="bob", infer=False)
    m.copy.settle()
    assert m.copy.held(bob) == m.store.scope_versions(bob)
    reads.take()
    texts = [f.text for f in m.search("locker code", user_id="bob").facts]
    assert "gym locker code 1234" in texts
    assert set(reads.take()) == {"scope_versions"}  # the copy answered, nothing was exported
    with _memory(llm_server, minilm, neo4j_server, None) as plain:
        assert [f.text for f in plain.search("locker code", user_id="bob").facts] == texts
    # a merge gives the tenant a new epoch: the copy's version is stale at once
    helper = {"user_id": "alice", "agent_id": "helper"}
    m.copy.refresh(Tenant(**helper), wait=True)
    names = {e.name: e.id for e in m.get_all(**helper).entities}
    m.merge_entities(names["Alice"], names["Acme"], **helper)
    reads.take()
    merged = m.search("Alice", **helper)
    assert SEARCH_READS & set(reads.take())
    m.copy.refresh(Tenant(**helper), wait=True)
    reads.take()
    named = [(e.id, e.name) for e in merged.entities]
    assert [(e.id, e.name) for e in m.search("Alice", **helper).entities] == named
    assert set(reads.take()) == {"scope_versions"}
    # a deleted scope is deleted from the copy at once: no record stays on the client's disk
    m.delete_all(user_id="bob")
    assert m.copy.held(bob) == {} and m.copy.store.facts(bob) == []
    assert m.search("lock code", user_id="bob").facts == []
    m.copy.refresh(bob, wait=True)
    assert m.copy.held(bob) == {} and m.copy.store.facts(bob) == []
    assert m.copy.held(alice)  # other scopes stay copied
    m.reset()  # everything
    assert m.copy.held(alice) == {} and m.copy.store.tenants() == []


def _logged(m: Memory, tenant: Tenant) -> int:
    """The plans the server's log holds for exact `tenant`."""
    with m.store._driver.session() as session:  # type: ignore[attr-defined]
        query = "MATCH (p:PlanLog) WHERE p.tenant_key = $k RETURN count(p) AS n"
        return int(session.run(query, k=tenant.key).single()["n"])


def _behind(m: Memory, scope: Tenant) -> int:
    """How many plans the copy's tenants of `scope` are behind the server's (one epoch)."""
    assert m.copy is not None
    held, server = m.copy.held(scope), m.store.scope_versions(scope)
    assert set(held) == set(server)
    return sum(int(server[k].rpartition(":")[2]) - int(held[k].rpartition(":")[2]) for k in held)


def test_other_clients_plans_catch_the_copy_up_without_copying_a_tenant_whole(
    filled: Memory,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: ScriptedLLMServer,
    minilm: Any,
    neo4j_server: Any,
) -> None:
    """Writers that keep the plan log: the copy applies the plans since its versions (an LLM
    add, verbatim adds, a fact edit, a fact delete) and answers as Neo4j does, without
    reading any tenant whole."""
    m = filled
    assert m.copy is not None
    alice, bob = Tenant(user_id="alice"), Tenant(user_id="bob")
    for scope in (alice, bob):
        m.copy.refresh(scope, wait=True)
    before = m.copy.status()
    with _memory(llm_server, minilm, neo4j_server, None, plan_log=True) as other:
        other.add("I live in London", user_id="alice", timestamp=T1)  # the LLM path
        other.add("bike lock code 7788", user_id="bob", infer=False)
        facts = {f.text: f.id for f in other.get_all(user_id="bob").facts}
        other.update(facts["locker code 4521"], "locker code 9999", user_id="bob")
        other.delete(facts["bike lock code 7788"], user_id="bob")
        other.add("gym bag is blue", user_id="bob", infer=False)
        want = {s.key: _answers(other, **ids) for s, ids in
                ((alice, {"user_id": "alice"}), (bob, {"user_id": "bob"}))}  # fmt: skip
    behind = _behind(m, alice) + _behind(m, bob)
    assert behind >= 4 and _logged(m, bob) >= 4

    def whole(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a tenant was read whole")

    monkeypatch.setattr(mem0g.archive, "read_tenant", whole)
    for scope in (alice, bob):
        m.copy.refresh(scope, wait=True)
        assert m.copy.held(scope) == m.store.scope_versions(scope)
    after = m.copy.status()
    assert after.caught_up - before.caught_up == behind and after.copied == before.copied
    reads = Reads(m.store)
    assert _answers(m, user_id="alice") == want[alice.key]
    assert _answers(m, user_id="bob") == want[bob.key]
    assert set(reads.take()) == {"scope_versions"}  # the copy answered
    texts = [f.text for f in m.search("locker code", user_id="bob").facts]
    assert "locker code 9999" in texts and "bike lock code 7788" not in texts


def test_a_plan_missing_from_the_log_means_a_whole_copy(
    filled: Memory, llm_server: ScriptedLLMServer, minilm: Any, neo4j_server: Any
) -> None:
    """A writer without the log, or more plans than the log keeps: the tenant is copied
    whole (never a wrong copy). The log keeps its window, and goes with a merge's epoch and
    with a deleted tenant."""
    m = filled
    assert m.copy is not None
    bob = Tenant(user_id="bob")
    m.copy.refresh(bob, wait=True)
    with _memory(llm_server, minilm, neo4j_server, None, plan_log=False) as quiet:
        quiet.add("bike lock code 7788", user_id="bob", infer=False)
    copied = m.copy.status().copied
    m.copy.refresh(bob, wait=True)
    assert m.copy.status().copied == copied + 1
    assert m.copy.held(bob) == m.store.scope_versions(bob)
    with _memory(llm_server, minilm, neo4j_server, None, plan_log=True, plan_log_keep=2) as short:
        for n in range(3):
            short.add(f"shed code {n}", user_id="bob", infer=False)
    assert _logged(m, bob) == 2  # the oldest went with the third write
    m.copy.refresh(bob, wait=True)  # three behind, two kept
    assert m.copy.status().copied == copied + 2
    reads = Reads(m.store)
    assert "shed code 2" in [f.text for f in m.search("shed code", user_id="bob").facts]
    assert set(reads.take()) == {"scope_versions"}
    helper = {"user_id": "alice", "agent_id": "helper"}
    assert _logged(m, Tenant(**helper)) == 0  # _fill's merge came after its add
    m.add("the helper's desk is by the window", **helper, infer=False)
    assert _logged(m, Tenant(**helper)) == 1  # this client's own writes are logged too
    names = {e.name: e.id for e in m.get_all(**helper).entities}
    m.merge_entities(names["Alice"], names["Acme"], **helper)
    assert _logged(m, Tenant(**helper)) == 0  # a new epoch: no copy can use them
    m.delete_all(user_id="bob")
    assert _logged(m, bob) == 0


def test_a_tenant_new_to_a_scope_or_gone_from_it_is_copied_or_deleted_alone(
    filled: Memory, monkeypatch: pytest.MonkeyPatch, llm_server: ScriptedLLMServer,
    minilm: Any, neo4j_server: Any,
) -> None:  # fmt: skip
    """A scope of several tenants (every user's `helper` agent): another client's first write
    of a new tenant copies that tenant only, and its delete deletes that tenant only; the
    others stay as they were, and the answers are Neo4j's."""
    m = filled
    assert m.copy is not None
    helpers = Tenant(agent_id="helper")
    m.copy.refresh(helpers, wait=True)
    assert set(m.copy.held(helpers)) == {Tenant(user_id="alice", agent_id="helper").key}
    read: list[str] = []
    real = mem0g.archive.read_tenant

    def counted(store: Any, tenant: Tenant, **kwargs: Any) -> Any:
        read.append(tenant.key)
        return real(store, tenant, **kwargs)

    monkeypatch.setattr(mem0g.archive, "read_tenant", counted)
    carol = Tenant(user_id="carol", agent_id="helper")
    with _memory(llm_server, minilm, neo4j_server, None, plan_log=True) as other:
        other.add("carol's desk is by the door", user_id="carol", agent_id="helper", infer=False)
    copied = m.copy.status().copied
    m.copy.refresh(helpers, wait=True)
    assert read == [carol.key] and m.copy.status().copied == copied + 1  # carol's alone
    assert m.copy.held(helpers) == m.store.scope_versions(helpers)
    with _memory(llm_server, minilm, neo4j_server, None) as plain:
        want = [f.text for f in plain.search("desk", agent_id="helper").facts]
    reads = Reads(m.store)
    assert [f.text for f in m.search("desk", agent_id="helper").facts] == want
    assert set(reads.take()) == {"scope_versions"}
    with _memory(llm_server, minilm, neo4j_server, None) as other:
        other.delete_all(user_id="carol", agent_id="helper")
    m.copy.refresh(helpers, wait=True)
    assert read == [carol.key]  # nothing read again
    assert set(m.copy.held(helpers)) == {Tenant(user_id="alice", agent_id="helper").key}
    assert m.copy.store.facts(carol) == []
    assert m.copy.status().copied == copied + 1


def test_a_scope_being_copied_is_answered_by_neo4j(
    filled: Memory,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: ScriptedLLMServer,
    minilm: Any,
    neo4j_server: Any,
) -> None:
    """The copy forgets a scope before it changes its records: a search meanwhile never reads
    half a copy."""
    m = filled
    assert m.copy is not None
    bob = Tenant(user_id="bob")
    m.copy.refresh(bob, wait=True)
    exporting, release = threading.Event(), threading.Event()
    real = mem0g.archive.read_tenant

    def slow(*args: Any, **kwargs: Any) -> Any:
        exporting.set()
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(mem0g.archive, "read_tenant", slow)
    with _memory(llm_server, minilm, neo4j_server, None) as other:  # another client writes
        other.add("bike lock code 7788", user_id="bob", infer=False)
    copying = threading.Thread(target=m.copy.refresh, args=(bob,), kwargs={"wait": True})
    copying.start()
    try:
        assert exporting.wait(30)
        assert m.copy.held(bob) == {}
        reads = Reads(m.store)
        texts = [f.text for f in m.search("lock code", user_id="bob").facts]
        assert "bike lock code 7788" in texts
        assert SEARCH_READS & set(reads.take())
    finally:
        release.set()
        copying.join(30)
    assert m.copy.held(bob)
    reads.take()
    assert [f.text for f in m.search("lock code", user_id="bob").facts] == texts
    assert set(reads.take()) == {"scope_versions"}


def test_the_copy_keeps_at_most_its_limit_the_tenants_searched_longest_ago_deleted(
    filled: Memory, tmp_path: Path, llm_server: ScriptedLLMServer, minilm: Any,
    neo4j_server: Any,
) -> None:  # fmt: skip
    """Past `local_copy_tenants`, the tenants searched longest ago leave the copy (records
    and version); their searches go to Neo4j, with the same answers, and copy them again.
    The searches' times survive a reopen, and a lowered limit applies at open."""
    filled.add("carol keeps bees on the roof", user_id="carol", infer=False)
    bob, carol = Tenant(user_id="bob"), Tenant(user_id="carol")
    helper = Tenant(user_id="alice", agent_id="helper")
    with _memory(llm_server, minilm, neo4j_server, None) as plain:  # Neo4j's own answers
        want = _answers(plain, user_id="alice", agent_id="helper")
    path = tmp_path / "small"
    with _memory(llm_server, minilm, neo4j_server, path, tenants=2) as m:
        assert m.copy is not None
        m.copy.refresh(bob, wait=True)
        m.copy.refresh(helper, wait=True)
        reads = Reads(m.store)
        m.search("lock code", user_id="bob")  # bob is now the later searched
        assert set(reads.take()) == {"scope_versions"}
        m.copy.refresh(carol, wait=True)  # a third tenant: the helper's goes
        assert set(m.copy.held(Tenant(user_id="alice"))) == set()
        assert m.copy.held(bob) and m.copy.held(carol)
        assert m.copy.store.facts(helper) == []
        assert {t.key for t in m.copy.store.tenants()} == {bob.key, carol.key}  # records gone
        assert _answers(m, user_id="alice", agent_id="helper") == want  # Neo4j answered
        assert SEARCH_READS & set(reads.take())
        m.copy.refresh(helper, wait=True)  # copied again: bob, searched before carol's copy, goes
        assert m.copy.held(helper) and m.copy.held(carol) and not m.copy.held(bob)
        shown = m.stats().local_copy
        assert shown is not None and (shown.tenants, shown.limit, shown.evicted) == (2, 2, 2)
    with _memory(llm_server, minilm, neo4j_server, path, tenants=1) as m:  # a lower limit
        assert m.copy is not None
        m.copy.settle()
        assert m.copy.held(helper) and not m.copy.held(carol)  # carol was searched longest ago
        assert m.copy.store.facts(carol) == []
        reads = Reads(m.store)
        assert _answers(m, user_id="alice", agent_id="helper") == want
        assert set(reads.take()) == {"scope_versions"}


def test_a_copy_needs_a_neo4j_store(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="local_copy keeps a copy of a Neo4j store"):
        Memory({"graph_store": {"path": str(tmp_path / "g"), "local_copy": str(tmp_path / "c")}})


def test_the_copy_finds_a_scopes_tenants_by_its_ids(tmp_path: Path) -> None:
    """Which copied tenants a scope covers, as a scope filters records (any id it leaves out
    matches every value), from the copy's index of held tenants, and after a reopen."""
    copy = LocalCopy(None, tmp_path / "copy", dims=None)
    keys = [Tenant(user_id="u"), Tenant(user_id="u", agent_id="a"),
            Tenant(user_id="u", agent_id="a", run_id="r"), Tenant(agent_id="a"),
            Tenant(run_id="r"), Tenant(user_id="v", agent_id="a")]  # fmt: skip
    for n, tenant in enumerate(keys):
        copy._hold(tenant.key, f"e:{n}")
        copy._db.execute(
            "INSERT INTO copied (tenant_key, version) VALUES (?, ?)", (tenant.key, f"e:{n}")
        )

    def covered(copy: LocalCopy, **ids: str) -> list[int]:
        return sorted(keys.index(Tenant.from_key(k)) for k in copy.held(Tenant(**ids)))

    for reopen in (False, True):
        if reopen:
            copy.close()
            copy = LocalCopy(None, tmp_path / "copy", dims=None)
        assert covered(copy, user_id="u") == [0, 1, 2]
        assert covered(copy, user_id="u", agent_id="a") == [1, 2]
        assert covered(copy, agent_id="a") == [1, 2, 3, 5]
        assert covered(copy, run_id="r") == [2, 4]
        assert covered(copy, user_id="w") == []
    copy.close()


def test_a_copy_made_before_the_limit_opens_and_is_cut_to_it(tmp_path: Path) -> None:
    """A copy directory written before searches' times were kept opens with its tenants, and
    one holding more than the limit is cut to it at open (no search time: by key)."""
    import sqlite3

    (tmp_path / "copy").mkdir()
    old = sqlite3.connect(tmp_path / "copy" / "copied.db")
    old.execute("CREATE TABLE copied (tenant_key TEXT PRIMARY KEY, version TEXT NOT NULL)")
    keys = sorted(Tenant(user_id=u).key for u in ("u1", "u2", "u3"))
    old.executemany("INSERT INTO copied VALUES (?, ?)", [(k, "e:1") for k in keys])
    old.commit()
    old.close()
    copy = LocalCopy(None, tmp_path / "copy", dims=None, tenants=2)
    copy.settle()
    assert set(copy.held(Tenant(user_id="u2"))) | set(copy.held(Tenant(user_id="u3"))) == set(
        keys[1:])  # fmt: skip
    assert copy.held(Tenant(user_id="u1")) == {}
    assert copy.status().evicted == 1
    copy.close()
    with pytest.raises(ValueError, match="local_copy_tenants"):
        LocalCopy(None, tmp_path / "other", dims=None, tenants=0)


def test_one_process_per_copy_directory(tmp_path: Path) -> None:
    """Which tenants a copy holds, and which a search reads, are known to its process only:
    a second process must not copy into the same directory."""
    import subprocess
    import sys

    held = LocalCopy(None, tmp_path / "copy", dims=None)
    try:
        code = ("from pathlib import Path; from mem0g.memory.copy import LocalCopy; "
                f"LocalCopy(None, Path({str(tmp_path / 'copy')!r}), dims=None)")  # fmt: skip
        other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert other.returncode != 0
        assert "is in use by another process" in other.stderr
    finally:
        held.close()
    LocalCopy(None, tmp_path / "copy", dims=None).close()  # free again once closed


def test_stats_shows_the_copy(tmp_path: Path, neo4j_server: Any, neo4j_connect: Any) -> None:
    """`mem0g stats` names what a configured copy holds and how many searches it answered;
    without one, no such row."""
    from cli_runner import CliRunner

    from mem0g.cli import app

    neo4j_connect().close()  # emptied
    env = {"MEM0G_HOME": str(tmp_path / "home"), "MEM0G_EMBEDDER__PROVIDER": "hashing",
           "MEM0G_GRAPH_STORE__PROVIDER": "neo4j", "NEO4J_URI": neo4j_server.uri,
           "NEO4J_USERNAME": neo4j_server.user, "NEO4J_PASSWORD": neo4j_server.password,
           "MEM0G_GRAPH_STORE__WARMUP": "false", "COLUMNS": "160"}  # fmt: skip
    plain = CliRunner(env=env).invoke(app, ["stats", "--json"])
    assert plain.exit_code == 0, plain.output
    assert "local_copy" not in json.loads(plain.stdout)
    env["MEM0G_GRAPH_STORE__LOCAL_COPY"] = str(tmp_path / "copy")
    copied = CliRunner(env=env).invoke(app, ["stats", "--json"])
    assert copied.exit_code == 0, copied.output
    env["MEM0G_GRAPH_STORE__LOCAL_COPY_TENANTS"] = "7"
    copied = CliRunner(env=env).invoke(app, ["stats", "--json"])
    assert copied.exit_code == 0, copied.output
    assert json.loads(copied.stdout)["local_copy"] == {
        "tenants": 0, "limit": 7, "answered": 0, "declined": 0, "evicted": 0, "copied": 0,
        "caught_up": 0}  # fmt: skip
    table = CliRunner(env={**env, "COLUMNS": "300"}).invoke(app, ["stats"])
    assert (
        "0 of at most 7 tenants held, 0 searches answered, 0 left to the server, 0 tenants "
        "copied whole, 0 plans caught up by, 0 tenants deleted for the limit"
    ) in table.stdout


def test_doctor_shows_the_copy_without_opening_it(
    tmp_path: Path, neo4j_server: Any, neo4j_connect: Any
) -> None:
    """`mem0g doctor` says what the copy directory holds, read-only, while a running client
    holds it open."""
    from cli_runner import CliRunner

    from mem0g.cli import app

    env = {"MEM0G_HOME": str(tmp_path / "home"), "MEM0G_EMBEDDER__PROVIDER": "hashing",
           "MEM0G_GRAPH_STORE__PROVIDER": "neo4j", "NEO4J_URI": neo4j_server.uri,
           "NEO4J_USERNAME": neo4j_server.user, "NEO4J_PASSWORD": neo4j_server.password,
           "MEM0G_GRAPH_STORE__WARMUP": "false", "COLUMNS": "250",
           "MEM0G_GRAPH_STORE__LOCAL_COPY": str(tmp_path / "copy")}  # fmt: skip
    first = CliRunner(env=env).invoke(app, ["doctor"])
    assert "local copy" in first.stdout and "none made yet" in first.stdout, first.output
    held = LocalCopy(None, tmp_path / "copy", dims=None)
    try:
        held._remember(Tenant(user_id="u").key, "e:1")
        running = CliRunner(env=env).invoke(app, ["doctor"])
        assert "1 of at most 100 tenants held" in running.stdout, running.output
        assert "in use by a running process" in running.stdout
        assert held.held(Tenant(user_id="u"))  # doctor took nothing from the running copy
    finally:
        held.close()
    after = CliRunner(env=env).invoke(app, ["doctor"])
    assert "1 of at most 100 tenants held" in after.stdout and "in use" not in after.stdout
