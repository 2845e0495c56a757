"""Graph stores behind the `GraphStore` seam; the embedded one needs no server.

The Neo4j store is deliberately not imported here, so `import mem0g.stores` never needs the
neo4j driver.

What lives here: `base.py` (the `GraphStore` contract, `EdgeRef`, `StoreCapabilities`,
errors), `plan.py` (the `WritePlan` rules both stores apply), `vectors.py` (the vector
maths), `walk.py` (the one-call graph half of a search), `repair.py` (merge/split/rename
rules), `lexical_query.py` (query words for FTS5 / Lucene), `archive_reads.py` (the reads a
backup needs); `embedded/` and `neo4j/`, one folder per backend. Who may import it: `Memory`
(which opens a store with `make_store`), the stages through the seam (`base`, `vectors`,
`walk`, `lexical_query`), archive.py, the CLI, the service (records and errors only), tests
and scripts. It imports types, config (the Neo4j settings) and resources (the .cypher
files), and the fact-link rule of resolve/links.py lazily; never a stage.
"""

from mem0g.stores.base import GraphStore, IndexRebuild, StoreError, StoreStats
from mem0g.stores.embedded import EmbeddedGraphStore

__all__ = ["EmbeddedGraphStore", "GraphStore", "IndexRebuild", "StoreError", "StoreStats"]
