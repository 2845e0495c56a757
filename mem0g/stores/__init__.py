"""Graph stores behind the `GraphStore` seam; the embedded one needs no server.

The Neo4j store is deliberately not imported here, so `import mem0g.stores` never needs the
neo4j driver.
"""

from mem0g.stores.base import GraphStore, IndexRebuild, StoreError, StoreStats
from mem0g.stores.embedded import EmbeddedGraphStore

__all__ = ["EmbeddedGraphStore", "GraphStore", "IndexRebuild", "StoreError", "StoreStats"]
