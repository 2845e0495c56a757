"""A client-held copy of the Neo4j tenants a client searches (`graph_store.local_copy`).

Why: a freshly restarted Neo4j server compiles its read paths for its first few hundred
searches, and on one server core that compiling alone costs about four query embeddings a
search (docs/benchmarks.md, issue #18). A search answered from a copy on the client's disk
needs the server for one small read only: the versions of the scope's tenants
(`Neo4jGraphStore.scope_versions`).

How: the copy is an embedded store (the stores answer a search the same way: the contract's
parity), filled per scope with each tenant's records as `mem0g export` reads them and
`mem0g import` writes them (archive.py), and a table of the versions it copied. A search of
a scope the copy holds runs on the copy while the versions are read; it is returned only if
the server's versions equal the copied ones, else Neo4j answers and the scope is copied
again in the background. Every write of a tenant changes its version (adds, fact edits,
merges, splits, deletes), so the copy never answers from stale records; a tenant written
often by other clients is answered by Neo4j until it has been copied again.

A plan this client writes is written to the copy too (`written`), when the copy held the
tenant at the version the plan was based on: an agent that adds and searches in turn keeps
its copy current without copying it again.

The copy holds at most `tenants` tenants (`graph_store.local_copy_tenants`): past it, those
searched longest ago are deleted from it.

Other clients' writes: where the server keeps the plan log (`graph_store.plan_log`, on for
every client with a copy), a tenant that moved is caught up by applying the plans logged
since its copied version, the same way; a plan missing from the log (a writer without it, or
one past the kept window) means copying the tenant whole, never a wrong copy. A tenant new to
a scope is copied alone, and one gone from the server deleted alone (`_by_tenant`).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel

from mem0g.stores.base import CopyStatus
from mem0g.stores.embedded import EmbeddedGraphStore
from mem0g.types import Tenant, WritePlan

log = logging.getLogger(__name__)

_T = TypeVar("_T")

RETRY_SECONDS = 1.0  # a scope is copied again at most this often
QUEUED_KEPT = 1024  # scopes whose last copying time is kept before the expired ones go
_UNSETTLED = ""  # copied.db's version of a tenant forgotten before its records were settled


class LocalCopy:
    """The copy: an embedded store under `path`, and the version of each tenant it holds."""

    def __init__(self, source: Any, path: Path, dims: int | None, tenants: int = 100) -> None:
        if tenants < 1:
            raise ValueError("graph_store.local_copy_tenants must be at least 1")
        self.source = source  # a Neo4jGraphStore (scope_versions, and the export's reads)
        self.path = Path(path).expanduser()
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock_file = _only_user(self.path)
        self.store = EmbeddedGraphStore(self.path / "graph", dims=dims)
        self._db = sqlite3.connect(self.path / "copied.db", check_same_thread=False,
                                   isolation_level=None)  # fmt: skip
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS copied (tenant_key TEXT PRIMARY KEY, version TEXT NOT NULL)"
        )
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(copied)")}
        if "used" not in columns:  # a copy made before the bound
            self._db.execute("ALTER TABLE copied ADD COLUMN used REAL NOT NULL DEFAULT 0")
        rows = self._db.execute("SELECT tenant_key, version, used FROM copied")
        self.limit = tenants
        self._held: dict[str, str] = {}
        self._used: dict[str, float] = {}  # key -> when a search last asked for it (epoch s)
        self._by_id: dict[tuple[int, str], set[str]] = {}  # (id field, id) -> held keys
        # Tenants forgotten whose records the store may still hold, in part or whole (being
        # changed or deleted, or left by a failed write or a crash): a search of a scope that
        # covers one is left to Neo4j. Why: a tenant gone from the server is in neither the
        # copied versions nor the server's, so comparing versions cannot see its records.
        self._unsettled: set[str] = set()
        for key, version, used in rows.fetchall():
            if version == _UNSETTLED:
                self._unsettled.add(key)
                continue
            self._hold(key, version)
            self._used[key] = float(used)
        self._cond = threading.Condition()
        self._readers: Counter[str] = Counter()
        self._queued: dict[str, float] = {}  # scope key -> when last queued
        self._copies: set[Future[None]] = set()  # copyings queued or running (see `close`)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem0g-copy")
        self._reads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mem0g-copy-read")
        self._closed = False
        self.answered = 0  # searches the copy answered
        self.declined = 0  # searches it left to Neo4j (scope not held, or held stale)
        self.evicted = 0  # tenants deleted from it for the bound, since it opened
        self.caught_up = 0  # other clients' plans it applied from the plan log, since it opened
        self.copied = 0  # tenants it copied whole, since it opened
        if len(self._held) > self.limit:  # the bound was lowered since the copy was made
            self._worker.submit(self._evict_quietly, set())

    def held(self, scope: Tenant) -> dict[str, str]:
        """The copied versions of the tenants of `scope` (key -> version)."""
        with self._cond:
            return self._mine(scope)

    def _mine(self, scope: Tenant) -> dict[str, str]:
        """`held` under the lock: the keys of the scope's first id, then the scope's filter
        (a copy may hold many tenants: no scan of them all per search)."""
        ids = (scope.user_id, scope.agent_id, scope.run_id)
        field = next(i for i, value in enumerate(ids) if value is not None)
        keys = self._by_id.get((field, str(ids[field])), set())
        return {k: self._held[k] for k in sorted(keys) if scope.matches(Tenant.from_key(k))}

    def _hold(self, key: str, version: str | None) -> None:
        """Record (or, with None, forget) the copied version of one tenant."""
        tenant = Tenant.from_key(key)
        ids = (tenant.user_id, tenant.agent_id, tenant.run_id)
        for field, value in enumerate(ids):
            if value is None:
                continue
            keys = self._by_id.setdefault((field, value), set())
            if version is None:
                keys.discard(key)
                if not keys:  # a long-running client sees many ids: keep only those held
                    del self._by_id[(field, value)]
            else:
                keys.add(key)
        if version is None:
            self._held.pop(key, None)
            self._used.pop(key, None)
        else:
            self._held[key] = version

    def search(self, scope: Tenant, run: Callable[[Any], _T]) -> _T | None:
        """`run(copy_store)` when the copy holds `scope` at the server's versions (read
        meanwhile, on the copy's own threads: never behind an add's work), else None, and
        the scope is copied again in the background."""
        with self._cond:
            mine = self._mine(scope)
            if any(scope.matches(Tenant.from_key(k)) for k in self._unsettled):
                mine = {}  # records the server may not have: not run, not compared
            self._readers.update(list(mine))
            now = time.time()
            for key in mine:
                self._used[key] = now  # kept in memory; written when copied and at close
        result, ran, current = None, False, None
        try:
            if mine:  # else no version read: the copying reads the versions itself
                versions: Future[dict[str, str]] = self._reads.submit(
                    self.source.scope_versions, scope
                )
                try:
                    result, ran = run(self.store), True
                except Exception:  # a damaged copy: Neo4j answers, the scope is copied again
                    log.exception("mem0g local copy: a search of %s failed", scope.key)
                current = versions.result()
        finally:
            with self._cond:
                self._readers.subtract(list(mine))
                for key in mine:
                    if self._readers[key] <= 0:
                        del self._readers[key]
                self._cond.notify_all()
        if ran and current == mine:
            with self._cond:
                self.answered += 1
            return result
        with self._cond:
            self.declined += 1
        self.refresh(scope)
        return None

    def refresh(self, scope: Tenant, *, wait: bool = False) -> None:
        """Copy `scope` again (in the background; at most once per RETRY_SECONDS)."""
        with self._cond:
            if self._closed:
                return
            last = self._queued.get(scope.key)
            if not wait and last is not None and time.monotonic() - last < RETRY_SECONDS:
                return
            now = time.monotonic()
            if len(self._queued) >= QUEUED_KEPT:  # only the throttled ones matter
                self._queued = {k: t for k, t in self._queued.items() if now - t < RETRY_SECONDS}
            self._queued[scope.key] = now
            future = self._worker.submit(self._copy, scope)  # under the lock: see `close`
            self._copies.add(future)
        future.add_done_callback(self._copy_done)
        if wait:
            with contextlib.suppress(CancelledError):  # the client closed meanwhile
                future.result()

    def _copy_done(self, future: Future[None]) -> None:
        with self._cond:
            self._copies.discard(future)

    def written(self, plan: WritePlan) -> None:
        """A plan this client wrote to the server: the copy writes it too (in the background,
        in turn with copying), when the copy held its tenant at the version the plan was
        based on. The server refuses a plan whose tenant moved past `based_on`
        (PlanConflict), and each plan moves a tenant's plan number by one, so the copy is then
        at the server's version again, without copying the tenant whole."""
        if plan.based_on is None:
            return
        own = plan.model_copy(deep=True, update={"based_on": None})  # the caller keeps its own
        with self._cond:
            if self._closed or self._held.get(plan.tenant.key) != plan.based_on:
                return
            self._worker.submit(self._write, own, plan.based_on)  # under the lock: see `close`

    def _write(self, plan: WritePlan, based_on: str) -> None:
        key = plan.tenant.key
        with self._cond:
            if self._held.get(key) != based_on:
                return  # copied again meanwhile
            self._forget([key])
        try:
            self.store.apply(plan)
        except Exception:  # the tenant stays forgotten: it is copied whole at its next search
            log.exception("mem0g local copy: writing a plan of %s failed", key)
            return
        epoch, _, seq = based_on.rpartition(":")
        with self._cond:
            self._remember(key, f"{epoch}:{int(seq) + 1}")

    def _forget(self, keys: list[str]) -> None:
        """Under the lock: drop the keys' versions, then wait until no search reads them.
        They are unsettled until `_remember` or `_settle` (on disk too, for a crash)."""
        for key in keys:
            self._hold(key, None)
        self._unsettled.update(keys)
        self._db.executemany(
            "INSERT OR REPLACE INTO copied (tenant_key, version, used) VALUES (?, ?, 0)",
            [(k, _UNSETTLED) for k in keys],
        )
        while any(self._readers[k] > 0 for k in keys):
            self._cond.wait()

    def _settle(self, scope: Tenant | None) -> None:
        """Under the lock: the store was just cleared of `scope` (None: of everything), so the
        unsettled tenants it covers hold no records any more."""
        done = [k for k in self._unsettled if scope is None or scope.matches(Tenant.from_key(k))]
        self._unsettled.difference_update(done)
        self._db.executemany("DELETE FROM copied WHERE tenant_key = ? AND version = ?",
                             [(k, _UNSETTLED) for k in done])  # fmt: skip

    def _strays(self, scope: Tenant) -> set[str]:
        """Under the lock: the unsettled tenants `scope` covers."""
        return {k for k in self._unsettled if scope.matches(Tenant.from_key(k))}

    def _remember(self, key: str, version: str) -> None:
        """Under the lock: the copy holds the tenant at `version`, used now (or when a
        search last asked for it, if later)."""
        used = max(self._used.get(key, 0.0), time.time())
        self._hold(key, version)
        self._unsettled.discard(key)
        self._used[key] = used
        self._db.execute(
            "INSERT OR REPLACE INTO copied (tenant_key, version, used) VALUES (?, ?, ?)",
            (key, version, used),
        )

    def _evict(self, keep: set[str]) -> None:
        """On the worker: delete the tenants searched longest ago until at most `limit` are
        held, never one of `keep` (the scope just copied). A victim is deleted as a scope
        filter, as `delete_all` deletes (the embedded store deletes by filter): the held
        tenants that filter also matches go with it and are forgotten with it."""
        while True:
            with self._cond:
                if len(self._held) <= self.limit:
                    return
                victims = sorted((k for k in self._held if k not in keep),
                                 key=lambda k: (self._used.get(k, 0.0), k))  # fmt: skip
                victim = None
                for key in victims:
                    scope = Tenant.from_key(key)
                    gone = [k for k in self._held if scope.matches(Tenant.from_key(k))]
                    if not keep.intersection(gone):
                        victim = key
                        break
                if victim is None:
                    return  # only the scope just copied is left to delete: held past the bound
                self._forget(gone)
                self.evicted += len(gone)
            self.store.delete_tenant(Tenant.from_key(victim))
            with self._cond:
                self._settle(Tenant.from_key(victim))

    def _evict_quietly(self, keep: set[str]) -> None:
        try:
            self._evict(keep)
        except Exception:  # the copy stays larger than its bound until the next copying
            log.exception("mem0g local copy: deleting the tenants searched longest ago failed")

    def _copy(self, scope: Tenant) -> None:
        try:
            self._copy_scope(scope)
        except Exception:  # the copy stays without the scope: Neo4j answers it
            log.exception("mem0g local copy: copying %s failed", scope.key)

    def _copy_scope(self, scope: Tenant) -> None:
        """Forget the scope's tenants (once no search reads them), delete them from the copy,
        and write each tenant of the server's scope as `mem0g import` would, with the
        version read before its records: a write in between makes the copy newer than its
        version says, which the next search sees as stale, never the other way round."""
        versions = self.source.scope_versions(scope)
        with self._cond:
            mine = self._mine(scope)
            strays = self._strays(scope)
            if versions and mine == versions and not strays:
                return  # caught up meanwhile (a plan of this client's: `written`)
        if versions and self._by_tenant(mine, versions, strays):
            self._evict(set(versions))
            return
        with self._cond:
            self._forget(list(self._mine(scope)))
        self.store.delete_tenant(scope)
        with self._cond:
            self._settle(scope)
        for key, version in sorted(versions.items()):
            self._copy_tenant(key, version)
        self._evict(set(versions))

    def _copy_tenant(self, key: str, version: str) -> None:
        """Write one tenant of the server as `mem0g import` would (the copy holds none of it)."""
        from mem0g.archive import read_tenant, tenant_plan  # archive imports Memory

        self.store.apply(tenant_plan(self.store, read_tenant(self.source, Tenant.from_key(key))))
        with self._cond:
            self._remember(key, version)
            self.copied += 1

    def _by_tenant(self, mine: dict[str, str], versions: dict[str, str], strays: set[str]) -> bool:
        """Bring the scope to the server's versions tenant by tenant: the moved ones by
        their logged plans (`_catch_up`), a tenant new to the scope copied alone, one gone
        from the server deleted alone. False when that cannot be done exactly: a plan missing
        from the log, or a new or gone tenant whose key, as a filter, covers another tenant
        (`{user: u}` covers `{user: u, agent: a}`: the embedded store deletes by filter); the
        scope is then copied whole."""
        new = sorted(set(versions) - set(mine))  # strays the server has among them
        gone = sorted({*mine, *strays} - set(versions))
        every = [Tenant.from_key(k) for k in {*mine, *versions, *strays}]
        for key in (*new, *gone):
            mask = Tenant.from_key(key)
            if any(mask.matches(t) and t.key != key for t in every):
                return False
        kept = {k: v for k, v in mine.items() if k in versions}
        if not self._catch_up(kept, {k: versions[k] for k in kept}):
            return False
        for key in gone:
            with self._cond:
                self._forget([key])
            self.store.delete_tenant(Tenant.from_key(key))
            with self._cond:
                self._settle(Tenant.from_key(key))
        for key in new:
            self.store.delete_tenant(Tenant.from_key(key))  # records a failed write left behind
            self._copy_tenant(key, versions[key])
        return True

    def _catch_up(self, mine: dict[str, str], versions: dict[str, str]) -> bool:
        """Bring the held tenants that moved to the server's versions by the plans their
        writers logged since (graph_store.plan_log): the copy then does what the server did,
        plan by plan, as for this client's own plans (`written`). False, having changed
        nothing, when a plan is missing from the log; False after a failed write too (the
        tenant stays forgotten and the scope is then copied whole)."""
        moved = {key: (mine[key], want) for key, want in versions.items() if mine[key] != want}
        plans = {}
        for key, (have, want) in moved.items():
            found = self.source.plans_since(Tenant.from_key(key), have, want)
            if found is None:
                return False
            plans[key] = found
        for key, (have, want) in moved.items():
            with self._cond:
                if self._held.get(key) != have:
                    return False  # changed meanwhile (a plan of this client's)
                self._forget([key])
            try:
                for plan in plans[key]:
                    self.store.apply(plan)
            except Exception:
                log.exception("mem0g local copy: catching %s up by its logged plans failed", key)
                return False
            with self._cond:
                self._remember(key, want)
                self.caught_up += len(plans[key])
        return True

    def drop(self, scope: Tenant | None) -> None:
        """Delete `scope` (None: every tenant) from the copy, as the server just did: a
        deleted user's records do not stay on this client's disk. In turn with copying (a
        copy under way ends first), and waited for."""
        with self._cond:
            if self._closed:
                return
            dropping = self._worker.submit(self._drop, scope)  # under the lock: see `close`
        dropping.result()

    def _drop(self, scope: Tenant | None) -> None:
        with self._cond:
            self._forget(list(self._held) if scope is None else list(self._mine(scope)))
        if scope is None:
            self.store.reset()
        else:
            self.store.delete_tenant(scope)
        with self._cond:
            self._settle(scope)

    def status(self) -> CopyStatus:
        with self._cond:
            return CopyStatus(tenants=len(self._held), limit=self.limit,
                              answered=self.answered, declined=self.declined,
                              evicted=self.evicted, copied=self.copied,
                              caught_up=self.caught_up)  # fmt: skip

    def settle(self) -> None:
        """Wait for the copying and writing queued so far."""
        self._worker.submit(lambda: None).result()

    def close(self) -> None:
        """Work queued before is done first, but for copyings not started (a scope not
        copied is copied again at its next search after a reopen). Every submit is made under
        the lock after a check of `_closed`, so none can reach the worker after its shutdown:
        a client's add that ends while the client closes is not turned into an error here."""
        with self._cond:
            self._closed = True
            for future in list(self._copies):  # copyings not yet started are not needed now:
                future.cancel()  # a tenant of 100k edges takes a minute (plans, drops still run)
        self._worker.shutdown(wait=True)
        self._reads.shutdown(wait=True)
        with self._cond:  # the searches' times, for the bound after a restart
            used = [(when, key) for key, when in self._used.items() if key in self._held]
        self._db.executemany("UPDATE copied SET used = ? WHERE tenant_key = ?", used)
        self.store.close()
        self._db.close()
        self._lock_file.close()  # the lock goes with it


class CopyOnDisk(BaseModel):
    """What a copy directory holds, read without opening the copy (`mem0g doctor`)."""

    tenants: int  # tenants it holds at a copied version
    size_bytes: int  # its files
    in_use: bool  # a process has it open (its lock is taken)


def peek(path: Path) -> CopyOnDisk | None:
    """The copy under `path`, read-only, or None where none was made yet. Why not open it:
    a running client holds its lock, and opening would start copying workers."""
    path = Path(path).expanduser()
    if not (path / "copied.db").is_file():
        return None
    db = sqlite3.connect(f"file:{path / 'copied.db'}?mode=ro", uri=True)
    try:
        (tenants,) = db.execute(
            "SELECT count(*) FROM copied WHERE version != ?", (_UNSETTLED,)
        ).fetchone()
    finally:
        db.close()
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    in_use = False
    try:
        import fcntl
    except ImportError:
        fcntl = None  # type: ignore[assignment]
    if fcntl is not None and (path / "lock").is_file():
        with open(path / "lock", "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                in_use = True
            else:
                fcntl.flock(handle, fcntl.LOCK_UN)
    return CopyOnDisk(tenants=int(tenants), size_bytes=size, in_use=in_use)


def _only_user(path: Path) -> IO[bytes]:
    """An exclusive lock on the copy's directory for this process's life. Why: which tenants
    the copy holds, and which of them a search is reading, are known in this process only; a
    second process copying into the same directory could delete a tenant another reads."""
    handle = open(path / "lock", "wb")  # noqa: SIM115 (held open: the lock lives with it)
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock (one process per directory, as documented)
        return handle
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise ValueError(
            f"graph_store.local_copy {path} is in use by another process: give each process "
            "its own directory"
        ) from None
    return handle
