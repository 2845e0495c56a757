"""The client-held copy (memory/copy.py) against a fake server (an embedded store with the
versions and plan log of a Neo4j store): interleavings of the copy's worker with searches,
made deterministic with events. No Neo4j, no model."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import mem0g.memory.copy
from mem0g.memory.copy import LocalCopy
from mem0g.stores.embedded import EmbeddedGraphStore
from mem0g.types import Fact, Tenant, WritePlan


class FakeServer(EmbeddedGraphStore):
    """What LocalCopy reads of a Neo4jGraphStore: `scope_versions`, `plans_since`, and the
    export's reads (an embedded store's). Versions are `epoch:seq`, as Neo4j's."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, dims=None)
        self.store = self
        self.versions: dict[str, str] = {}
        self.log: dict[str, dict[int, WritePlan]] = {}
        self.epochs = 0

    def scope_versions(self, scope: Tenant) -> dict[str, str]:
        return {k: v for k, v in self.versions.items() if scope.matches(Tenant.from_key(k))}

    def plans_since(self, tenant: Tenant, have: str, want: str) -> list[WritePlan] | None:
        epoch, _, start = have.rpartition(":")
        until_epoch, _, until = want.rpartition(":")
        if epoch != until_epoch or int(until) <= int(start):
            return None
        log = self.log.get(tenant.key, {})
        wanted = range(int(start) + 1, int(until) + 1)
        if any(seq not in log for seq in wanted):
            return None
        return [log[seq].model_copy(deep=True) for seq in wanted]

    def write(self, tenant: Tenant, *texts: str) -> WritePlan:
        """A plan of new facts, logged, the tenant's version moved on by one."""
        plan = WritePlan(tenant=tenant, new_facts=[Fact(tenant=tenant, text=t) for t in texts])
        self.store.apply(plan)
        version = self.versions.get(tenant.key)
        if version is None:
            self.epochs += 1
            epoch, seq = f"e{self.epochs}", 1
        else:
            epoch, _, last = version.rpartition(":")
            seq = int(last) + 1
        self.versions[tenant.key] = f"{epoch}:{seq}"
        self.log.setdefault(tenant.key, {})[seq] = plan.model_copy(deep=True)
        return plan

    def delete(self, scope: Tenant) -> None:
        EmbeddedGraphStore.delete_tenant(self, scope)
        for key in [k for k in self.versions if scope.matches(Tenant.from_key(k))]:
            del self.versions[key]
            self.log.pop(key, None)


def _texts(store: Any, scope: Tenant) -> list[str]:
    return sorted(f.text for f in store.facts(scope))


U = Tenant(user_id="u")
UA = Tenant(user_id="u", agent_id="a")


def _user_and_agent(tmp_path: Path) -> FakeServer:
    """A server holding user u's fact and the fact of u's agent a (a tenant {user: u} covers)."""
    server = FakeServer(tmp_path / "server")
    server.write(U, "u likes tea")
    server.write(UA, "the secret the agent kept")
    return server


def _search_u_during(
    copy: LocalCopy, copied: Tenant, deleting: threading.Event, release: threading.Event
) -> Any:
    """A search of U while the copying of `copied` is held in its deletion (`deleting`)."""
    copying = threading.Thread(target=copy.refresh, args=(copied,), kwargs={"wait": True})
    copying.start()
    try:
        assert deleting.wait(30)
        return copy.search(U, lambda store: _texts(store, U))
    finally:
        release.set()
        copying.join(30)


def test_a_tenant_deleted_by_another_client_is_never_answered_while_the_copy_deletes_it(
    tmp_path: Path,
) -> None:
    """Another client deletes {u, a}; this client's copy of {user: u} deletes it alone
    (`_by_tenant`). A search of {user: u} while that deletion runs must not be answered with
    {u, a}'s records: the server no longer has them."""
    server = _user_and_agent(tmp_path)
    copy = LocalCopy(server, tmp_path / "copy", dims=None)
    try:
        copy.refresh(U, wait=True)
        assert set(copy.held(U)) == {U.key, UA.key}
        server.delete(UA)  # another client's delete_all(user_id=u, agent_id=a)

        deleting, release = threading.Event(), threading.Event()
        real = copy.store.delete_tenant

        def slow(scope: Tenant) -> int:
            deleting.set()
            assert release.wait(30)
            return real(scope)

        copy.store.delete_tenant = slow  # type: ignore[method-assign]
        answer = _search_u_during(copy, U, deleting, release)
        assert answer in (None, ["u likes tea"]), answer  # never the deleted tenant's fact
        assert copy.search(U, lambda store: _texts(store, U)) == ["u likes tea"]
    finally:
        copy.close()
        server.close()


def test_a_failed_deletion_of_a_gone_tenant_does_not_leave_its_records_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy's deletion of a tenant gone from the server fails once (a disk error, or the
    process dies there): the copy must not then answer searches of the wider scope with the
    gone tenant's records, before or after a reopen; its next copying deletes them."""
    monkeypatch.setattr(mem0g.memory.copy, "RETRY_SECONDS", 0.0)
    server = _user_and_agent(tmp_path)
    copy = LocalCopy(server, tmp_path / "copy", dims=None)
    try:
        copy.refresh(U, wait=True)
        server.delete(UA)
        real = copy.store.delete_tenant

        def failing(scope: Tenant) -> int:
            raise OSError("disk I/O error")

        copy.store.delete_tenant = failing  # type: ignore[method-assign]
        copy.refresh(U, wait=True)  # logged, not raised
        assert copy.search(U, lambda store: _texts(store, U)) is None
        copy.settle()
        assert copy.search(U, lambda store: _texts(store, U)) is None
        copy.settle()
        copy.store.delete_tenant = real  # type: ignore[method-assign]
    finally:
        copy.close()
    copy = LocalCopy(server, tmp_path / "copy", dims=None)  # as after a crash there
    try:
        assert _texts(copy.store, U) == ["the secret the agent kept", "u likes tea"]
        assert copy.search(U, lambda store: _texts(store, U)) is None
        copy.settle()
        assert copy.search(U, lambda store: _texts(store, U)) == ["u likes tea"]
        assert _texts(copy.store, UA) == []
    finally:
        copy.close()
        server.close()


def test_a_tenant_evicted_while_gone_from_the_server_is_never_answered(tmp_path: Path) -> None:
    """Eviction forgets {u, a}, then deletes its records; another client had deleted it on
    the server. A search of {user: u} in between must not be answered with its records."""
    server = _user_and_agent(tmp_path)
    server.write(Tenant(user_id="v"), "v likes coffee")
    copy = LocalCopy(server, tmp_path / "copy", dims=None, tenants=2)
    try:
        copy.refresh(U, wait=True)
        with copy._cond:
            copy._used[UA.key] = 0.0  # searched longest ago: the victim
        server.delete(UA)
        deleting, release = threading.Event(), threading.Event()
        real = copy.store.delete_tenant

        def slow(scope: Tenant) -> int:
            if scope == UA:
                deleting.set()
                assert release.wait(30)
            return real(scope)

        copy.store.delete_tenant = slow  # type: ignore[method-assign]
        answer = _search_u_during(copy, Tenant(user_id="v"), deleting, release)
        assert answer in (None, ["u likes tea"]), answer
    finally:
        copy.close()
        server.close()


def test_the_copys_bookkeeping_stays_bounded_by_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-running client searching many tenants, with the copy bounded to 2: what the
    copy keeps in memory per tenant must not grow with every tenant it ever saw."""
    monkeypatch.setattr(mem0g.memory.copy, "RETRY_SECONDS", 0.0)
    monkeypatch.setattr(mem0g.memory.copy, "QUEUED_KEPT", 8)
    server = FakeServer(tmp_path / "server")
    users = [Tenant(user_id=f"user{n}", agent_id=f"agent{n}") for n in range(60)]
    for tenant in users:
        server.write(tenant, f"{tenant.user_id} likes tea")
    copy = LocalCopy(server, tmp_path / "copy", dims=None, tenants=2)
    try:
        for tenant in users:
            copy.search(tenant, lambda store: None)  # declined: copied in the background
            copy.settle()
            copy.search(tenant, lambda store: None)  # answered from the copy
        copy.settle()
        assert copy.status().tenants == 2
        assert copy.status().evicted == len(users) - 2
        assert sum(1 for keys in copy._by_id.values() if keys) <= 4
        assert len(copy._by_id) <= 4, len(copy._by_id)
        assert len(copy._readers) == 0, len(copy._readers)
        assert len(copy._queued) <= 8, len(copy._queued)
    finally:
        copy.close()
        server.close()


def test_a_plan_written_while_the_client_closes_raises_nothing(tmp_path: Path) -> None:
    """`Memory.add` hands its committed plan to the copy (`written`) while another thread
    closes the client. The copy's worker must not be shut down between `written`'s check of
    `_closed` and its submit: that raised RuntimeError from an add that had succeeded."""
    server = FakeServer(tmp_path / "server")
    server.write(U, "u likes tea")
    copy = LocalCopy(server, tmp_path / "copy", dims=None)
    closing: list[threading.Thread] = []
    try:
        copy.refresh(U, wait=True)
        (version,) = copy.held(U).values()
        real = copy._worker.submit

        def racing(fn: Any, /, *args: Any) -> Any:
            if not closing:  # the close lands here, between the check and the submit
                closing.append(threading.Thread(target=copy.close))
                closing[0].start()
                deadline = time.monotonic() + 0.5
                while not copy._closed and time.monotonic() < deadline:
                    time.sleep(0.01)
            return real(fn, *args)

        copy._worker.submit = racing  # type: ignore[method-assign]
        plan = WritePlan(tenant=U, new_facts=[Fact(tenant=U, text="u likes jam")], based_on=version)
        copy.written(plan)  # raises nothing
    finally:
        if closing:
            closing[0].join(30)
            assert not closing[0].is_alive()
        else:
            copy.close()
        server.close()


def test_close_skips_copyings_not_yet_started_and_keeps_the_rest(tmp_path: Path) -> None:
    """A client closing while a copying runs and another waits behind it: the running one
    ends, the waiting one never starts (a large tenant would hold the close for a minute),
    and a drop queued after them still runs (a deleted user's records leave the disk)."""
    server = FakeServer(tmp_path / "server")
    server.write(U, "u likes tea")
    server.write(Tenant(user_id="v"), "v likes coffee")
    copy = LocalCopy(server, tmp_path / "copy", dims=None)
    try:
        copy.refresh(U, wait=True)
        running, release = threading.Event(), threading.Event()
        real = copy._copy
        started: list[str] = []

        def slow(scope: Tenant) -> None:
            started.append(scope.key)
            if scope.user_id == "w":
                running.set()
                assert release.wait(30)
            real(scope)

        copy._copy = slow  # type: ignore[method-assign]
        copy.refresh(Tenant(user_id="w"))  # runs, held until released
        assert running.wait(30)
        copy.refresh(Tenant(user_id="v"))  # queued behind it
        server.delete(U)
        dropping = threading.Thread(target=copy.drop, args=(U,))
        dropping.start()  # queued behind both
        time.sleep(0.2)
        closing = threading.Thread(target=copy.close)
        closing.start()
        time.sleep(0.2)
        release.set()
        closing.join(30)
        dropping.join(30)
        assert not closing.is_alive() and not dropping.is_alive()
        assert started == [Tenant(user_id="w").key]  # v's copying never started
    finally:
        if not copy._closed:
            copy.close()
    reopened = LocalCopy(server, tmp_path / "copy", dims=None)
    try:
        assert _texts(reopened.store, U) == []  # the drop ran before the close ended
        assert reopened.held(Tenant(user_id="v")) == {}
    finally:
        reopened.close()
        server.close()
