"""Driver plumbing of the Neo4j store: sessions, auto-commit reads with retries,
managed transactions, and the mapping of driver and server errors to `StoreError`.

`Neo4jSession` is a mixin of `Neo4jGraphStore` (store.py), which sets the attributes it reads
(`_driver`, `database`, `_lock`, `_schema_ready`); `_ready` applies the schema once
(indexes.py). Only the store's own modules use it."""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

from neo4j import READ_ACCESS, WRITE_ACCESS, Driver, ManagedTransaction, Result, Session
from neo4j.exceptions import (
    AuthError,
    ClientError,
    DriverError,
    IncompleteCommit,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from mem0g.stores.base import StoreError
from mem0g.stores.neo4j.statements import PACKED, packed_statements, statements
from mem0g.stores.neo4j.traffic import Traffic

_T = TypeVar("_T")


_CYPHER_OPTIONS = re.compile(r"[A-Za-z]+=[A-Za-z]+( [A-Za-z]+=[A-Za-z]+)*")
_READ_ATTEMPTS = 3  # auto-commit reads: tries on a transient error (see _read)
_SCHEMA_ATTEMPTS = 5  # the schema step: tries on a transient error (_apply_schema_retrying)
_WRITE_ATTEMPTS = 5  # _write_unbounded: tries on a transient error or a lost connection
_MEMORY_POOL = "Neo.TransientError.General.MemoryPoolOutOfMemoryError"


def _rows(result: Result) -> list[dict[str, Any]]:
    """Records as dicts. Not `Result.data()`: it walks every value in Python to turn graph
    objects into dicts (our statements return maps and scalars only), which costs more than
    decoding a row's 384-float embedding."""
    return [dict(record) for record in result]


class _OverTransactionLimit(Exception):
    """Raised inside a transaction function for the server's per-transaction memory limit:
    not a driver error, so `execute_write` does not retry it."""


def _over_transaction_limit(exc: Neo4jError) -> bool:
    """The transaction needs more memory than `db.memory.transaction.max` lets one have. The
    server sends this with a *transient* code, which the driver retries with back-off for
    30 s, to fail the same way each time: the limit is the operator's setting. (The total
    limits, `db.memory.transaction.total.max` and `dbms.`'s, share the code and are
    transient indeed: other transactions hold that memory.)"""
    return exc.code == _MEMORY_POOL and "db.memory.transaction.max" in (exc.message or "")


def _too_large(what: str, exc: Neo4jError) -> StoreError:
    return StoreError(
        f"{what}: it needs more memory than the server lets one transaction have "
        f"(db.memory.transaction.max): raise that setting, or add less at once ({exc.message})"
    )


def shown_url(url: str) -> str:
    """`url` without its user info (a user and password written into it): for messages."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _explain(exc: Exception, url: str, user: str | None, database: str | None) -> str:
    """One line for a driver or server error. Those of reaching the server (refused, wrong
    password, no such database) name its URL, user and database: the settings to check.
    The driver's own text of a server error also carries its GQL status, whose description
    ("unexpected error ... see debug log") misleads; the code and message are kept."""
    at = f"Neo4j at {url}" if url else "Neo4j"
    code, message = None, str(exc)
    if isinstance(exc, Neo4jError) and exc.message and exc.message in message:
        code, message = exc.code, exc.message  # (not one built by hand, with defaults)
    if isinstance(exc, AuthError) or code == "Neo.ClientError.Security.Unauthorized":
        text = f"{at} refused the login of user {user!r}: wrong username or password? ({message})"
    elif code == "Neo.ClientError.Security.AuthenticationRateLimit":
        text = f"{at} refuses logins of user {user!r} for now, after wrong passwords ({message})"
    elif code == "Neo.ClientError.Database.DatabaseNotFound":
        text = (f"{at} has no database {database!r} (graph_store.database; Community Edition "
                f"has only 'neo4j') ({message})")  # fmt: skip
    elif isinstance(exc, (ServiceUnavailable, SessionExpired)):
        text = f"cannot reach {at}: {message}"
        if urlsplit(url).scheme.endswith(("+s", "+ssc")):
            text += f" (a {urlsplit(url).scheme}:// URL needs TLS on the server's Bolt port)"
    elif code:
        text = f"{code}: {message}"
    else:
        text = message
    return _one_line(text)


class Neo4jSession:
    """Connection and statement plumbing (a mixin of `Neo4jGraphStore`)."""

    _driver: Driver | None
    database: str | None
    # for messages: the server's URL (without user info; "" for a caller's driver), the user
    url: str = ""
    _user: str | None = None
    _lock: threading.RLock
    # sessions open on the driver: `close` waits for them (`_in_flight`) before it closes it
    _gate: threading.Condition
    _in_flight: int
    _schema_ready: bool
    _traffic: Traffic  # real calls in flight, which the warm-up waits for (traffic.py)
    # names of the statements run, while `recording_reads` is on (the round-trip count of
    # scripts/search_trips.py); None: off, nothing recorded
    _reads_seen: list[str] | None = None
    # the auto-commit reads' texts: each statement packed (below) or as written, with
    # "CYPHER <options> " before it (graph_store.cypher_options); empty: as written
    _read_texts: Mapping[str, str] = MappingProxyType({})
    # graph_store.packed_reads: every auto-commit read sends its parameters in one map
    # parameter, `$args`, so the server plans each statement once whatever the lengths of
    # its strings and lists (statements.packed)
    packed_reads: bool = False
    # the schema step of the first use (indexes.py): its seconds, and why the DDL ran (empty:
    # the database held the schema, two reads); None until it has run
    schema_seconds: float | None = None
    schema_gaps: tuple[str, ...] = ()

    @contextmanager
    def recording_reads(self) -> Iterator[list[str]]:
        """The names of the reads this store runs meanwhile, one per round trip (a managed
        read transaction counts once, by its name). For measuring, not for production."""
        seen: list[str] = []
        self._reads_seen = seen
        try:
            yield seen
        finally:
            self._reads_seen = None

    def _use_cypher_options(self, options: str, packed: bool | None = None) -> None:
        """Cypher query options (e.g. "expressionEngine=interpreted") before every auto-commit
        read; they become Cypher text, so only option=value words are accepted. `packed`
        (None: as it is) switches the reads to one map parameter (`packed_reads`)."""
        if options and not _CYPHER_OPTIONS.fullmatch(options):
            raise ValueError(
                "cypher_options must be option=value words, e.g. "
                f"'expressionEngine=interpreted'; got {options!r}"
            )
        if packed is not None:
            self.packed_reads = packed
        if not options and not self.packed_reads:
            self._read_texts = MappingProxyType({})
            return
        texts = packed_statements() if self.packed_reads else statements()
        prefix = f"CYPHER {options} " if options else ""
        self._read_texts = MappingProxyType({name: prefix + t for name, t in texts.items()})

    if TYPE_CHECKING:  # provided by the store's other mixins

        def _apply_schema(self, driver: Driver) -> None: ...  # indexes.py

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Driver and server errors become StoreError; our own StoreErrors pass through."""
        try:
            yield
        except (Neo4jError, DriverError) as exc:
            raise self._failed(what, exc) from exc

    def _failed(self, what: str, exc: Exception) -> StoreError:
        return StoreError(f"{what}: {_explain(exc, self.url, self._user, self.database)}")

    def _connected(self) -> Driver:
        driver = self._driver
        if driver is None:
            raise StoreError("the store is closed")
        return driver

    def _ready(self) -> Driver:
        """The driver, after the schema has been applied once by this store."""
        driver = self._connected()
        if not self._schema_ready:
            # (real work the warm-up stands aside for: a first search waits on it)
            with self._traffic.call("schema"), self._lock:
                if not self._schema_ready:
                    began = time.monotonic()
                    with self._errors("could not open the store (its schema step)"):
                        self._apply_schema_retrying(driver)
                    self.schema_seconds = round(time.monotonic() - began, 3)
                    self._schema_ready = True
        return driver

    def _apply_schema_retrying(self, driver: Driver) -> None:
        """The schema step, again after a transient error: stores that open at once on a
        database lacking part of the schema run the same DDL, and the server may end one's
        schema transaction as a deadlock. Every statement is idempotent, so the whole step
        runs again (after a random pause, so the stores do not collide again in step)."""
        for attempt in range(_SCHEMA_ATTEMPTS):
            try:
                self._apply_schema(driver)
                return
            except TransientError:
                if attempt + 1 == _SCHEMA_ATTEMPTS:
                    raise
                time.sleep(random.uniform(0.05, 0.2) * 2**attempt)

    @contextmanager
    def _session(self, driver: Driver, access: str = WRITE_ACCESS) -> Iterator[Session]:
        """Sessions share the driver's bookmark manager (reads see earlier writes, also on a
        cluster) and ask for no notifications: the statements name properties that an
        empty database does not know yet, which is expected, not worth a warning.

        Each one is counted while open, so `close` lets a write in flight commit (and a read
        end) before it closes the driver; none opens once `close` has begun."""
        with self._gate:
            if self._driver is None:
                raise StoreError("the store is closed")
            self._in_flight += 1
        try:
            with driver.session(
                database=self.database,
                default_access_mode=access,
                bookmark_manager=driver.execute_query_bookmark_manager,
                notifications_min_severity="OFF",
            ) as session:
                yield session
        finally:
            with self._gate:
                self._in_flight -= 1
                self._gate.notify_all()

    def _await_sessions(self, timeout: float) -> bool:
        """After `_driver` was cleared: wait until no session is open (False: `timeout`)."""
        with self._gate:
            return self._gate.wait_for(lambda: self._in_flight == 0, timeout)

    def _auto(self, driver: Driver, name: str, params: dict[str, Any] | None = None) -> Any:
        """Run a statement in an auto-commit transaction (schema, batched deletes)."""
        with self._session(driver) as session:
            result = session.run(statements()[name], params or {})
            records = _rows(result)
            result.consume()
            return records

    def _ddl(self, driver: Driver, name: str, params: dict[str, Any] | None = None) -> None:
        """A schema statement; IF NOT EXISTS makes it idempotent, and a store that loses the
        race to create the same rule concurrently gets "already exists", which is fine."""
        try:
            self._auto(driver, name, params)
        except ClientError as exc:
            if not (exc.code or "").endswith("AlreadyExists"):
                raise

    def _read(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """One statement as an auto-commit read: one round trip, where a managed transaction
        takes two (BEGIN with RUN, then COMMIT), and a search makes several reads. A read is
        idempotent, so transient failures are retried here as execute_read would."""
        driver = self._ready()
        text = self._read_texts.get(name) or statements()[name]
        packed = self.packed_reads
        if (seen := self._reads_seen) is not None:
            seen.append(name)  # list.append is atomic: reads of the pool's threads are safe
        for attempt in range(_READ_ATTEMPTS):
            try:
                with self._traffic.call(name), self._session(driver, READ_ACCESS) as session:
                    return _rows(session.run(text, {PACKED: params} if packed else params))
            except (TransientError, SessionExpired, ServiceUnavailable) as exc:
                if isinstance(exc, TransientError) and _over_transaction_limit(exc):
                    raise _too_large(f"read {name} failed", exc) from exc
                if attempt + 1 == _READ_ATTEMPTS:
                    raise self._failed(f"read {name} failed", exc) from exc
                time.sleep(0.05 * 2**attempt)
            except (Neo4jError, DriverError) as exc:
                raise self._failed(f"read {name} failed", exc) from exc
        raise AssertionError("unreachable")

    def _read_tx(self, what: str, work: Callable[[ManagedTransaction], _T]) -> _T:
        """One managed read transaction, for reads that need more than one statement to see
        the same data."""
        driver = self._ready()
        if (seen := self._reads_seen) is not None:
            seen.append(what)
        with (
            self._errors(f"read {what} failed"),
            self._traffic.call(what),
            self._session(driver, READ_ACCESS) as session,
        ):
            return session.execute_read(work)

    def _write(self, name: str, work: Callable[[ManagedTransaction], _T]) -> _T:
        """One managed write transaction (retried by the driver on transient errors, but
        not on the per-transaction memory limit, which would only fail again)."""
        driver = self._ready()

        def limited(tx: ManagedTransaction) -> _T:
            try:
                return work(tx)
            except TransientError as exc:
                if _over_transaction_limit(exc):
                    raise _OverTransactionLimit() from exc
                raise

        try:
            with (
                self._errors(f"{name} failed, nothing was written"),
                self._traffic.call(),
                self._session(driver) as session,
            ):
                return session.execute_write(limited)
        except _OverTransactionLimit as exc:
            cause = exc.__cause__
            assert isinstance(cause, Neo4jError)
            raise _too_large(f"{name} failed, nothing was written", cause) from cause
        except StoreError as exc:
            # the connection broke while the commit was on its way: the server may have
            # applied all of it, so "nothing was written" would be untrue
            if isinstance(exc.__cause__, IncompleteCommit):
                raise StoreError(
                    f"{name}: the connection was lost during the commit, so it is unknown "
                    "whether it was written (all or nothing): "
                    + _explain(exc.__cause__, self.url, self._user, self.database)
                ) from exc.__cause__
            raise

    def _write_unbounded(self, name: str, work: Callable[[ManagedTransaction], _T]) -> _T:
        """`_write` for an idempotent transaction whose size is not known beforehand (a
        scope's deletion): the server may refuse it for its memory *at commit*, which
        `execute_write` retries for 30 s to fail the same way; here that is a StoreError at
        once (its cause the server's error), and other transient errors and a lost
        connection are tried again, as the driver would."""
        driver = self._ready()
        delay = 0.5
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                with (
                    self._errors(f"{name} failed, nothing was written"),
                    self._traffic.call(),
                    self._session(driver) as session,
                    session.begin_transaction() as tx,
                ):
                    out = work(cast(ManagedTransaction, tx))
                    tx.commit()
                    return out
            except StoreError as exc:
                cause = exc.__cause__
                if isinstance(cause, Neo4jError) and cause.code == _MEMORY_POOL:
                    raise
                again = (TransientError, SessionExpired, ServiceUnavailable, IncompleteCommit)
                if not isinstance(cause, again) or attempt == _WRITE_ATTEMPTS - 1:
                    raise
            time.sleep(delay * random.uniform(0.8, 1.2))
            delay *= 2
        raise AssertionError("unreachable")  # the loop returns or raises

    def _run(self, tx: ManagedTransaction, name: str, params: dict[str, Any]) -> Any:
        """Every statement of a write transaction goes through here: (rows, counters)."""
        result = tx.run(statements()[name], params)
        rows = _rows(result)
        return rows, result.consume().counters
