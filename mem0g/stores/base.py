"""The `GraphStore` seam: everything the pipeline needs from storage, and nothing more.

Scopes: every read takes a `Tenant` used as a filter (ids that are set must match, unset ids
match anything), unless `exact=True`, where the record's tenant must equal the scope exactly
(the resolvers use that: entities merge only inside one exact tenant). Writes arrive only as a
`WritePlan`, applied all-or-nothing.

Vectors are unit-length float32 numpy arrays, so cosine similarity is a dot product.

Scored reads, the one mode of the edge reads: `expand(..., vector=q)`, `similar_relations` and
`siblings` return light `EdgeRef`s (ids, ends, relation, hop, score), never copied records, so
the retriever can rank hundreds of candidate edges and copy only the few it returns
(`get_relations`); both stores score with the same float32 arithmetic (`stores.vectors`), so
rankings do not depend on the store. `siblings` is the scored read behind "who works with X":
it reads, at each hub next to a seed, only the edges with one relation name on one side,
instead of every edge of the hub (a city or an employer holds hundreds).

What a store can do beyond that is declared, not sniffed: `GraphStore.capabilities`
(`StoreCapabilities`), read by `Memory` and the retrievers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel

from mem0g.stores.vectors import Hub, blocks_top, unit_vector
from mem0g.types import (
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactEvent,
    GraphSnapshot,
    MergeResult,
    Message,
    PossibleDuplicate,
    Relation,
    SplitResult,
    Summary,
    Tenant,
    UpdateQuery,
    Validity,
    WritePlan,
)

if TYPE_CHECKING:
    from mem0g.stores.walk import WalkRequest, WalkResult


@dataclass(frozen=True)
class StoreCapabilities:
    """What a store declares it can do (as LlamaIndex's PropertyGraphStore declares
    `supports_vector_queries`), so callers read a flag instead of method signatures."""

    # reads are round trips to a server: a search may run its independent reads at once on a
    # small pool, so the waits overlap (in-process reads would only pay thread overhead)
    concurrent_reads: bool = False
    # BM25 reads: `lexical_relations`, `lexical_facts`, `lexical_entities`
    lexical: bool = False
    # `fact_timeline(scope)`: every fact event with its episode's time, for `as_of` facts
    fact_timeline: bool = False
    # `linked_facts`: the facts linked at add time to the entities they name (`FactLink`)
    fact_links: bool = False
    # `walk(scope, request)` is one round trip (the walk, siblings, BM25 and the likely hits'
    # records in one statement), so the retriever calls it instead of the separate reads;
    # every store has `walk`, and both ways answer the same (mem0g/stores/walk.py)
    walk_statement: bool = False
    # `name_ranker(scope)`: the scope's entity-name vectors held by the store and brought up to
    # date in one read, so a search ranks the names on the client (exact, as the embedded
    # store does) and that read runs while the query is embedded, where a vector read cannot
    held_names: bool = False
    # `fact_vector_sum(scope)`: the sum of the unit vectors of the scope's current facts, kept
    # by the writes (never a scan of the facts per search): the scope's centroid, from which
    # the dense fact ranking takes its hubness correction (`FusionConfig.hub_penalty`)
    fact_vector_sum: bool = False
    # a restore (`mem0g import`) of a tenant larger than one transaction should be is written
    # in parts (`stores.plan_parts`): a server's transaction memory bounds one transaction (a
    # 100,000-edge tenant did not fit a 512 MiB Neo4j); SQLite writes any size at once
    restore_in_parts: bool = False


class StoreStats(BaseModel):
    entities: int
    relations: int
    valid_relations: int
    invalid_relations: int
    episodes: int
    tenants: int
    # current facts (not deleted ones), as many as `facts(scope)` returns (for the whole
    # store: of every tenant); counted by the store's engine, never by reading the facts
    facts: int = 0
    warmup: WarmupStatus | None = None  # the store's warm-up, when it has one (Memory.stats)
    local_copy: CopyStatus | None = None  # a client-held copy, if configured (Memory.stats)

    @classmethod
    def counted(cls, row: Any, tenants: int) -> StoreStats:
        """From the one row both stores' count statements give (a sqlite3.Row or a Neo4j
        record): entities, relations, invalid (ended relations), episodes, facts."""
        return cls(
            entities=row["entities"],
            relations=row["relations"],
            valid_relations=row["relations"] - row["invalid"],
            invalid_relations=row["invalid"],
            episodes=row["episodes"],
            tenants=tenants,
            facts=row["facts"],
        )


class CopyStatus(BaseModel):
    """A client-held copy of a Neo4j store's tenants (`graph_store.local_copy`,
    mem0g/memory/copy.py): what `stats` shows."""

    tenants: int  # tenants it holds at a copied version
    limit: int  # the most it holds (graph_store.local_copy_tenants)
    answered: int  # searches it answered since this process opened it
    declined: int  # searches it left to the server (scope not held, or held stale)
    evicted: int = 0  # tenants deleted from it for the limit since this process opened it
    copied: int = 0  # tenants it copied whole since this process opened it
    caught_up: int = 0  # other clients' plans it applied from the server's plan log


class WarmupStatus(BaseModel):
    """A store's background warm-up of its server's read paths (Neo4j; see
    mem0g/stores/neo4j/warmup.py): what `mem0g doctor` and `stats` show."""

    state: Literal["off", "waiting", "running", "done", "failed"] = "waiting"
    seconds: float = 0.0
    rounds: int = 0
    statements: int = 0
    shapes: int = 0  # searches per round over the store's own data (0: an empty store)
    searches: int = 0  # searches over the store's own data run in all
    planned_apart: int = 0  # statements no such search ran, read once against the empty tenant
    settled: bool = False  # its rounds stopped getting faster before the bound
    yielded_s: float = 0.0  # seconds it stood aside for real reads and writes
    real_calls: int = 0  # real reads and writes the store served meanwhile
    stood_down: bool = False  # it ended because those had warmed the server already
    error: str | None = None

    @property
    def ended(self) -> bool:
        """Done, failed or off: nothing left to wait for."""
        return self.state not in ("waiting", "running")


def wait_until_ended(
    status: Callable[[], WarmupStatus],
    timeout: float | None = None,
    progress: Callable[[WarmupStatus], None] | None = None,
    every: float = 5.0,
) -> WarmupStatus:
    """Poll a warm-up's `status` until it is neither waiting nor running, or `timeout`
    seconds; `progress` sees it every `every` seconds meanwhile."""
    deadline = None if timeout is None else time.monotonic() + timeout
    shown = time.monotonic()
    while True:
        now_status = status()
        if now_status.ended:
            return now_status
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return now_status
        if progress is not None and now - shown >= every:
            progress(now_status)
            shown = now
        time.sleep(0.1)


class IndexRebuild(BaseModel):
    """One vector index a store rebuilt (`GraphStore.rebuild_vector_indexes`)."""

    kind: str  # entities, relations or facts
    index: str  # the store's name for it
    seconds: float  # from the marker to the index being online


class StoreError(RuntimeError):
    """A store could not do what was asked; nothing was written."""


class PlanConflict(StoreError):
    """Another writer changed the tenant after the plan was computed (`WritePlan.based_on`
    is stale): nothing was written; plan again from fresh reads."""


class RepairError(ValueError):
    """An entity repair (merge, split) the store refuses: bad input, nothing was written."""


class UnknownEntityError(RepairError, LookupError):
    """No such entity (or merge event) in the caller's scope: unknown, deleted, merged away,
    or another tenant's; they are not told apart, so a scope never learns of others' ids."""


class CrossTenantError(RepairError):
    """Both entities are in the caller's scope but belong to different exact tenants."""


VECTOR_KINDS = ("entities", "relations", "facts")  # what a store keeps vectors of


def check_index_kinds(kinds: Sequence[str] | None) -> list[str]:
    """The kinds asked for (all when None), each one known, in a stable order."""
    if kinds is None:
        return list(VECTOR_KINDS)
    unknown = sorted(set(kinds) - set(VECTOR_KINDS))
    if unknown:
        raise ValueError(f"unknown index kind(s) {unknown}; choose from {list(VECTOR_KINDS)}")
    return [kind for kind in VECTOR_KINDS if kind in kinds]


class EdgeRef(NamedTuple):
    """An edge as a scored read returns it: enough to rank it and to find its siblings; the
    record itself comes from `get_relations` (only for the edges a search returns)."""

    id: str
    source_id: str
    relation: str
    destination_id: str
    hop: int  # hop distance from the seeds (`expand`); 0 from `similar_relations`
    score: float  # see `edge_score` (`expand`); the store's cosine (`similar_relations`)


@dataclass(frozen=True)
class NameRanker:
    """A scope's entity-name vectors as one read left them (`GraphStore.name_ranker`): ranks
    them as `similar_entities` does, exactly, and reads only the records of the names kept."""

    blocks: tuple[tuple[Sequence[str], np.ndarray], ...]  # per tenant: ids, their unit rows
    dims: int | None
    # the named entities without their embeddings (ones gone since are left out)
    records: Callable[[list[str]], list[Entity]]
    # the scope's kept fact vector sum, when the same read brought it (`fact_vector_sum`:
    # a search's fact half then sends no read of its own for it); None in `fact_sum` with
    # `fact_sum_read` means the scope has no fact with a vector
    fact_sum: np.ndarray | None = None
    fact_sum_read: bool = False

    def similar(
        self,
        vector: np.ndarray,
        k: int,
        min_score: float | None = None,
        known: Collection[str] = (),
    ) -> list[tuple[Entity, float]]:
        """`similar_entities(scope, vector, k, light=True)`, only the hits scoring at least
        `min_score` and not `known` (a search links those, and already holds the entities its
        words named): no record is read when none is left."""
        query, _ = unit_vector(vector)
        if self.dims is not None and query.shape[0] != self.dims:
            raise StoreError(f"query has {query.shape[0]} dims, the store {self.dims}")
        picked = blocks_top(((ids, rows, None) for ids, rows in self.blocks), query, k)
        picked = [(i, score) for i, score in picked
                  if (min_score is None or score >= min_score) and i not in known]  # fmt: skip
        if not picked:
            return []
        found = {e.id: e for e in self.records([i for i, _ in picked])}
        return [(found[i], score) for i, score in picked if i in found]


def edge_score(vector: np.ndarray, embedding: np.ndarray | Sequence[float] | None) -> float:
    """How `expand(..., vector=)` scores an edge: float32 `np.dot(vector, embedding)`, exactly
    the arithmetic the retriever applies to a copied record (0.0 for an edge without one)."""
    if embedding is None:
        return 0.0
    return float(np.dot(vector, np.asarray(embedding, dtype=np.float32)))


def edge_ref(rel: Relation, hop: int, score: float) -> EdgeRef:
    return EdgeRef(rel.id, rel.source_id, rel.relation, rel.destination_id, hop, score)


@runtime_checkable
class GraphStore(Protocol):
    capabilities: StoreCapabilities
    # the size of the embeddings the store holds or was opened for; None while it holds none
    dims: int | None

    def apply(self, plan: WritePlan) -> None:
        """Write the whole plan in one transaction, or nothing (then raise). With
        `plan.based_on`, first check inside the transaction that the exact tenant's version is
        still that one (else raise PlanConflict); every write of a tenant moves its version."""

    def apply_many(self, plans: Sequence[WritePlan]) -> None:
        """Plans of distinct exact tenants (else StoreError), each checked as `apply` checks
        it, all written in one transaction or none (then raise). For bulk loads (an archive's
        import): a commit has a fixed cost (an fsync; on Neo4j a refresh of every full-text
        and vector index it touched), paid once here instead of once per plan."""

    def tenant_version(self, tenant: Tenant) -> str:
        """An opaque token that changes whenever anything of the exact tenant is written
        (adds, fact edits, merges, splits, deletes), read from the database itself, so a
        writer in another process is seen. A plan records it as `based_on`."""

    def get_entities(self, scope: Tenant, ids: Sequence[str]) -> list[Entity]: ...

    def get_relations(self, scope: Tenant, ids: Sequence[str]) -> list[Relation]: ...

    def find_entities(
        self, scope: Tenant, keys: Sequence[str], *, exact: bool = False
    ) -> list[Entity]:
        """Entities having any of these normalised keys (name or alias)."""

    def similar_entities(
        self, scope: Tenant, vector: np.ndarray, k: int, *, exact: bool = False, light: bool = False
    ) -> list[tuple[Entity, float]]:
        """Top-k entities by name-embedding cosine, best first; `light`: without their
        embeddings (entity linking needs names and ids, and a server sends less)."""

    def name_ranker(self, scope: Tenant, *, wait: bool = False) -> NameRanker | None:
        """(`capabilities.held_names`) the scope's entity-name vectors, brought up to date;
        None when the store does not hold them for this scope (too large, entities it cannot
        account for, or, unless `wait`, a tenant still being read for the first time): then
        `similar_entities` answers."""

    def relations_touching(
        self, scope: Tenant, entity_ids: Sequence[str], validity: Validity, *, exact: bool = False
    ) -> list[Relation]:
        """Edges with either endpoint in `entity_ids` (one hop, both directions)."""

    def update_candidates(
        self, tenant: Tenant, queries: Sequence[UpdateQuery], k: int
    ) -> list[list[Relation]]:
        """Per query, at most `k` current edges of exact `tenant` at either of its endpoints,
        the edges the new triple most likely replaces first: the identical edge (same
        endpoints and relation), then its rivals (same source, same relation: Diego works_at X
        when Diego now works_at Y), then by cosine to the query's vector (a missing vector,
        one without a direction or of another size, scores 0), then newest first. Records
        come without embeddings. Why in the store: a hub endpoint holds hundreds or thousands
        of edges, which the caller would otherwise read in full, vectors and all, on every
        add."""

    def expand(
        self,
        scope: Tenant,
        entity_ids: Sequence[str],
        hops: int,
        validity: Validity,
        limit: int,
        *,
        vector: np.ndarray,
    ) -> list[EdgeRef]:
        """Edges reachable within `hops` from the seeds (ignoring direction), breadth first,
        as `EdgeRef`s with their hop distance (1 = touches a seed), scored by `edge_score`
        against `vector`. Traversal walks only edges that `validity` accepts. Per frontier
        node (seeds in the given order), its edges newest first in write order, both
        directions together, so the cut at `limit` keeps a hub's latest edges: a speaker's
        node gains edges with every message, and an oldest-first cut would stop showing what
        it learns after a few hundred of them."""

    def siblings(
        self,
        scope: Tenant,
        keys: Sequence[tuple[str, str, bool]],
        validity: Validity,
        limit: int,
        *,
        vector: np.ndarray,
    ) -> list[EdgeRef]:
        """Edges at each hub with the given relation name, on the given side: key
        (hub_id, relation, hub_is_destination) -> edges (x)-[relation]->(hub) when True,
        (hub)-[relation]->(x) when False; in key order, then newest first in write order
        (as `expand`); hop=2; scored by
        `edge_score` against `vector`; at most `limit` in total; only edges the scope and
        validity accept; an edge matched by two keys appears once (first key).

        Why: the retriever reaches "who works with X" through X's hubs (X works_at C ->
        Y works_at C). Walking each hub with `expand` reads and sorts every edge of it (a city
        or a hobby holds hundreds, thousands in a large graph) to keep the few with the seed
        edge's relation and direction, and a limit on that walk cuts before the filter, so a
        big hub's other edges crowd out the real siblings. Here the filter comes first and the
        limit counts siblings only."""

    def walk(self, scope: Tenant, request: WalkRequest) -> WalkResult:
        """The graph half of a search after linking (mem0g/stores/walk.py): `expand` around
        `request.seeds` with the query vector, then `siblings` at the hubs `sibling_keys`
        picks, BM25 (`lexical_relations`, when `words` is set and the store has it), and the
        records (without embeddings) of `wanted_ids`. Exactly what `walk_in_turn` returns
        from those reads; with `capabilities.walk_statement`, in one round trip."""

    def similar_relations(
        self, scope: Tenant, vector: np.ndarray, k: int, validity: Validity
    ) -> list[EdgeRef]:
        """Top-k edges by triple-embedding cosine among those `validity` accepts, best first,
        as `EdgeRef`s (hop 0)."""

    def lexical_relations(
        self, scope: Tenant, words: list[str], k: int, validity: Validity
    ) -> list[EdgeRef]:
        """(`capabilities.lexical`) BM25 top-k edges over "source relation destination"."""

    def lexical_facts(
        self, scope: Tenant, words: list[str], k: int, *, exact: bool = False
    ) -> list[tuple[Fact, float]]:
        """(`capabilities.lexical`) BM25 top-k current facts for the query words."""

    def common_fact_words(
        self, scope: Tenant, words: list[str], share: float, *, exact: bool = False
    ) -> list[str]:
        """(`capabilities.lexical`) the `words` (in their order) that more than `share` of
        the scope's current facts hold, as the fact index analyses them (stemmed): words
        that tell none of the scope's facts apart, however rare BM25's store-wide
        statistics make them (`retrieve.facts`)."""

    def lexical_entities(
        self, scope: Tenant, words: list[str], k: int
    ) -> list[tuple[Entity, float]]:
        """(`capabilities.lexical`) BM25 top-k entities by name and aliases, without their
        embeddings."""

    def linked_facts(
        self, scope: Tenant, entity_ids: Sequence[str], vector: np.ndarray, k: int
    ) -> list[tuple[str, float, int]]:
        """(`capabilities.fact_links`) the scope's current facts linked to any of these
        entities, as (fact id, cosine with `vector`, how many of the entities it names): most
        named first, then by cosine, then write order (`vectors.rank_linked`); at most k."""

    def fact_timeline(self, scope: Tenant) -> list[tuple[FactEvent, datetime | None]]:
        """(`capabilities.fact_timeline`) every fact event of the scope, per fact in write
        order, with the time of the episode that said it (None without one)."""

    def snapshot(
        self, scope: Tenant, validity: Validity, *, embeddings: bool = True, exact: bool = False
    ) -> GraphSnapshot:
        """All entities of the scope and the edges `validity` accepts; `embeddings=False`
        leaves the vectors in the store (most of a big tenant's bytes, which `get_all` and
        the dumps would only drop). `exact`: the exact tenant only, read by its key, so a
        backup's per-tenant reads cost that tenant, not the whole user it belongs to."""

    def episodes(self, scope: Tenant, *, exact: bool = False) -> list[Episode]: ...

    # ---- the fact memory (Mem0) beside the graph; written through `apply` like the graph

    def get_facts(self, scope: Tenant, ids: Sequence[str]) -> list[Fact]: ...

    def facts(self, scope: Tenant, *, exact: bool = False) -> list[Fact]:
        """All current (not deleted) facts of the scope (`exact`: of the exact tenant only),
        oldest first."""

    def similar_facts(
        self,
        scope: Tenant,
        vector: np.ndarray,
        k: int,
        *,
        exact: bool = False,
        hub: Hub | None = None,
    ) -> list[tuple[Fact, float]]:
        """Top-k current facts by text-embedding cosine, best first. With `hub`, the same k
        facts re-scored as cosine - hub.penalty x cos(fact, hub.centre) and re-sorted
        (`vectors.hub_rescored`), the records without their embedding: the correction is made
        where the vectors are, so a server sends none of them."""

    def fact_vector_sum(self, scope: Tenant, *, exact: bool = False) -> np.ndarray | None:
        """(`capabilities.fact_vector_sum`) the float64 sum of the unit embeddings of the
        scope's current facts; None when no current fact has one."""

    def fact_history(self, scope: Tenant, fact_id: str) -> list[FactEvent]:
        """Every event of one fact, oldest first; still there after the fact is deleted."""

    def recent_messages(self, tenant: Tenant, limit: int) -> list[Message]:
        """The last `limit` messages of the exact tenant's episodes, in conversation order."""

    def message_count(self, tenant: Tenant) -> int:
        """How many messages the exact tenant's episodes hold."""

    def messages_since(self, tenant: Tenant, offset: int) -> list[Message]:
        """The exact tenant's messages after the first `offset` (episode order)."""

    def get_summary(self, tenant: Tenant) -> Summary | None: ...

    def set_summary(self, summary: Summary) -> None:
        """Replace the exact tenant's summary (its own small transaction)."""

    def tenants(self) -> list[Tenant]:
        """Every exact tenant that has records, sorted by key."""

    def delete_tenant(self, scope: Tenant) -> int:
        """Delete every record the scope matches; returns how many entities+edges went."""

    def reset(self) -> None:
        """Delete everything in this store."""

    def stats(self, scope: Tenant | None = None) -> StoreStats: ...

    def rebuild_vector_indexes(
        self,
        kinds: Sequence[str] | None = None,
        *,
        progress: Callable[[str, float], None] | None = None,
    ) -> list[IndexRebuild]:
        """Maintenance: rebuild the vector indexes (all, or these kinds) in one pass each, for
        a store whose index degrades as it is written in small pieces; `progress(kind,
        percent)` as each one populates. Searches stay correct meanwhile. A store without a
        vector index returns []."""

    # ---- entity repair (each one transaction of the entities' exact tenant, or nothing)

    def list_entities(self, scope: Tenant) -> list[Entity]:
        """Every entity of the scope, in write order, without embeddings."""

    def merge_entities(
        self, scope: Tenant, keep_id: str, other_id: str, *, at: datetime | None = None
    ) -> MergeResult:
        """Move every edge, alias and key of `other` onto `keep`, delete `other`, log a MERGE
        (with what `split_entity` needs). Edges between the two would become self-loops: they
        are removed and kept in the MERGE's undo record. Both must be in `scope` and of one
        exact tenant (`UnknownEntityError`, `CrossTenantError`)."""

    def split_entity(
        self, scope: Tenant, merge_id: str, *, at: datetime | None = None
    ) -> SplitResult:
        """Take a logged merge back: the merged-away entity returns with its id, name, type,
        aliases, keys and embedding, and exactly the edges that merge moved (and dropped)
        return to it; edges keep gained later stay. Logs a SPLIT."""

    def entity_history(self, scope: Tenant, entity_id: str) -> list[EntityEvent]:
        """MERGE/SPLIT/RENAME events naming the entity (kept or merged away), oldest first."""

    def possible_duplicates(self, scope: Tenant, *, exact: bool = False) -> list[PossibleDuplicate]:
        """Recorded candidate pairs whose two entities both still exist, oldest first."""

    @property
    def warmup_status(self) -> WarmupStatus:
        """The background warm-up's state; "off" for a store without a server to warm."""

    def close(self) -> None: ...
