"""Whether a database already holds the schema cypher/ declares, so a store can skip the DDL.

Applying the schema is about 60 `IF NOT EXISTS` statements (constraints, range, full-text and
vector indexes). Each one is a schema transaction planned on its own; on a freshly started
JVM they took seconds of server CPU before the first search could run (docs/benchmarks.md,
issue #18), and every store pays them again. So a store first reads what the database holds
(`SHOW INDEXES`, one read, and the layout version, one read) and compares it with the DDL of
cypher/ (`declared_schema`): only a gap runs the whole schema step (DDL, migrations,
back-fills), which stays as it was and stays idempotent under concurrent opens.

Detected (each one a gap): a layout version (:Mem0gSchema) below the store's, a constraint
or index of cypher/ missing by name (a new mem0g release's, or one dropped by hand; a
constraint counts as present when an index it owns is listed, as Neo4j gives every
uniqueness constraint one), an index that is not ONLINE (populating, failed), and vector
indexes that are missing, not all three, or not the store's dimensions. Not detected: an
index re-created by hand under the same name with another definition; the DDL's
`IF NOT EXISTS` would keep it as well, so a changed definition takes a new layout version
and a migration (as version 3 did for the full-text indexes)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mem0g.stores.neo4j.statements import statements

# the statements of the schema step, by their names' prefixes (cypher/schema.cypher,
# entities.cypher, lexical.cypher); the vector indexes are made for the store's dims
DDL_PREFIXES = ("constraint_", "index_", "fulltext_index_")
VECTOR_INDEXES = ("mem0g_entity_embedding", "mem0g_relation_embedding", "mem0g_fact_embedding")

_CREATES = re.compile(
    r"CREATE\s+(?P<what>CONSTRAINT|(?:RANGE\s+|TEXT\s+|POINT\s+|FULLTEXT\s+|VECTOR\s+)?INDEX)"
    r"\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+IF\s+NOT\s+EXISTS\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DeclaredSchema:
    """The names cypher/'s DDL creates: constraints and the indexes beside the vector ones."""

    constraints: frozenset[str]
    indexes: frozenset[str]


def ddl_names(library: Mapping[str, str]) -> list[str]:
    """The statements of the schema step, in file order."""
    return [name for name in library if name.startswith(DDL_PREFIXES)]


def parse_declared(library: Mapping[str, str]) -> DeclaredSchema:
    """The objects the DDL statements of `library` (name -> Cypher) create. A schema statement
    this cannot read is an error: the check would not know what to look for."""
    constraints: set[str] = set()
    indexes: set[str] = set()
    for name in ddl_names(library):
        found = _CREATES.match(library[name].strip())
        if found is None:
            raise ValueError(f"schema statement {name!r} is not 'CREATE ... <name> IF NOT EXISTS'")
        target = constraints if found["what"].upper() == "CONSTRAINT" else indexes
        if found["name"] in constraints | indexes:
            raise ValueError(f"schema object {found['name']!r} is created twice")
        target.add(found["name"])
    return DeclaredSchema(frozenset(constraints), frozenset(indexes))


@functools.cache
def declared_schema() -> DeclaredSchema:
    """What cypher/ declares, parsed once per process."""
    return parse_declared(statements())


@dataclass
class SchemaFound:
    """What the check read: the gaps (empty: the DDL may be skipped) and the dimensions of
    the vector indexes when they agree (None: none exist, or they disagree)."""

    gaps: list[str] = field(default_factory=list)
    dims: int | None = None


def check_schema(
    version: int | None,
    rows: Iterable[Mapping[str, Any]],
    dims: int | None,
    current: int,
    declared: DeclaredSchema | None = None,
) -> SchemaFound:
    """Compare the database (`version` of :Mem0gSchema, `rows` of the `schema_objects` read:
    name, state, constraint, dims) with the declared schema for a store of `dims` (None: the
    store does not know them yet and takes the indexes' own)."""
    declared = declared or declared_schema()
    found = SchemaFound()
    if (version or 0) < current:
        found.gaps.append(f"layout version {version or 0}, this mem0g writes {current}")
    listed = {row["name"]: row for row in rows}
    owners = {row["constraint"] for row in listed.values() if row.get("constraint")}
    found.gaps += [f"constraint {n} missing" for n in sorted(declared.constraints - owners)]
    for name in sorted(declared.indexes):
        row = listed.get(name)
        if row is None:
            found.gaps.append(f"index {name} missing")
        elif row["state"] != "ONLINE":
            found.gaps.append(f"index {name} is {row['state']}")
    vectors = {name: listed[name] for name in VECTOR_INDEXES if name in listed}
    sizes = {row["dims"] for row in vectors.values()}
    if len(sizes) == 1 and isinstance(size := next(iter(sizes)), int):
        found.dims = size
    want = dims if dims is not None else found.dims
    if want is None and not vectors:
        return found  # nothing embedded yet: the vector indexes come with the first embedding
    if want is None and len(sizes) > 1:
        found.gaps.append(f"vector indexes of different sizes: {sorted(map(str, sizes))}")
        return found
    for name in VECTOR_INDEXES:
        row = vectors.get(name)
        if row is None:
            found.gaps.append(f"vector index {name} missing")
        elif row["state"] != "ONLINE":
            found.gaps.append(f"vector index {name} is {row['state']}")
        elif want is None or row["dims"] != want:
            found.gaps.append(f"vector index {name} has {row['dims']} dimensions, not {want}")
    return found
