"""`GraphStore` on a Neo4j 5.26+ server (Community is enough): `Neo4jGraphStore`.

What lives here (the store is one class, `store.Neo4jGraphStore`, assembled from mixins):

* ``store.py``: the contract, a few lines per method (reads, facts, messages, summaries, stats);
* ``session.py``: the driver, sessions, auto-commit reads with retries, error mapping;
* ``statements.py``: the named statements of ``cypher/*.cypher``, and the reads packed;
* ``rows.py``: records <-> rows (times, tenants, vectors), scope and validity parameters;
* ``plan_rows.py``: a checked plan as the write statements' parameters;
* ``writes.py``: `apply` (the plan rules of `stores.plan` on one `plan_check` read), deletes;
* ``indexes.py``: schema and vector-index DDL, `rebuild_vector_indexes`; ``schema_check.py``:
  whether the database already holds the schema (then the DDL is skipped);
* ``vector_search.py``: index search with learned over-fetch, exact fallback, held vectors;
* ``entity_vectors.py``: the held entity-name vectors of recently used tenants;
* ``repairs.py``: entity merge/split; ``lexical.py``: BM25 over the full-text indexes;
* ``walk.py``: `walk` in one statement; ``links.py``: fact <-> entity links;
* ``warmup.py``: the background warm-up of the server's read paths; ``traffic.py``: the real
  reads and writes in flight, which the warm-up yields to.

Who may import it: `mem0g.stores.make_store`, the CLI and the archive reads (lazily: the
driver is an optional dependency, so `mem0g.stores` never imports this package), tests and
scripts. Outside this package, use only what this module exports.
"""

from mem0g.stores.neo4j.statements import (
    CYPHER_FILES,
    packed,
    packed_statements,
    parse_statements,
    statements,
)
from mem0g.stores.neo4j.store import Neo4jGraphStore

__all__ = [
    "CYPHER_FILES",
    "Neo4jGraphStore",
    "packed",
    "packed_statements",
    "parse_statements",
    "statements",
]
