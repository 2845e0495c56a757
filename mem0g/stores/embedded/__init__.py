"""The default graph store: one SQLite file for durability, everything served from memory.

What lives here (the store is one class, `store.EmbeddedGraphStore`, assembled from mixins):

* ``store.py``: open and load, the write transaction of a plan, deletes, the fact, message and
  summary reads, stats;
* ``schema.py``: the SQLite tables and statements, records <-> rows;
* ``graph.py``: the in-memory graph (per-tenant buckets, vector blocks, a networkx
  MultiDiGraph) and its reads: key lookup, vector search, `expand`, `siblings`, snapshots;
* ``facts.py``: the fact memory held beside the graph (facts, their history, summaries);
* ``loading.py``: which tenants the file holds, and reading a tenant in on first use;
* ``links.py``: the ``fact_links`` table (fact <-> entity links);
* ``repairs.py``: entity merge/split; ``lexical.py``: BM25 over SQLite's FTS5 tables.

Who may import it: `mem0g.stores` (which exports `EmbeddedGraphStore`), `mem0g.memory`, the
archive reads, tests and scripts. Outside this package, use only what this module exports.
"""

from mem0g.stores.embedded.schema import SCHEMA_VERSION
from mem0g.stores.embedded.store import EmbeddedGraphStore

__all__ = ["SCHEMA_VERSION", "EmbeddedGraphStore"]
