"""Graph stores behind the `GraphStore` seam; the embedded one needs no server.

The Neo4j store is deliberately not imported here, so `import mem0g.stores` never needs the
neo4j driver.

What lives here: `base.py` (the `GraphStore` contract, `EdgeRef`, `StoreCapabilities`, errors),
`plan.py` (the `WritePlan` rules both stores apply), `vectors.py` (the vector maths), `walk.py`
(the one-call graph half of a search), `repair.py` (merge/split/rename rules),
`lexical_query.py` (query words for FTS5 / Lucene), `archive_reads.py` (the reads a backup
needs); `embedded/` and `neo4j/`, one folder per backend; and here `make_store`, the configured
store. Who may import it: `Memory` and the CLI (which open a store with `make_store`), the
stages through the seam (`base`, `vectors`, `walk`, `lexical_query`), archive.py, the service
(records and errors only), tests and scripts. It imports types, config (the Neo4j settings) and
resources (the .cypher files), and the fact-link rule of resolve/links.py lazily; never a stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mem0g.stores.base import GraphStore, IndexRebuild, StoreError, StoreStats
from mem0g.stores.embedded import EmbeddedGraphStore

if TYPE_CHECKING:
    from mem0g.config import MemoryConfig

__all__ = [
    "EmbeddedGraphStore",
    "GraphStore",
    "IndexRebuild",
    "StoreError",
    "StoreStats",
    "make_store",
]


def make_store(config: MemoryConfig, dims: int | None) -> GraphStore:
    """The configured store. `dims=None` (no embedder loaded): both stores take the size from
    the data they hold (the embedded store's matrices, Neo4j's vector indexes), so reads,
    dumps and deletes need no model."""
    settings = config.graph_store
    if settings.provider == "neo4j":
        from mem0g.stores.neo4j import Neo4jGraphStore  # imported lazily: optional server

        return Neo4jGraphStore.from_config(settings, dims=dims)
    from mem0g.stores.embedded import EmbeddedGraphStore

    return EmbeddedGraphStore(
        settings.resolved_path(), dims=dims, max_loaded_tenants=settings.max_loaded_tenants
    )
