"""Dump formats for a `GraphSnapshot`: JSON, GraphML, a Neo4j Cypher script, Mermaid, and
the HTML explorer (mem0g/service/explorer.py).

Pure functions of a snapshot (no store access), so the CLI, the demo and users share them.
Names and relation labels come from users and LLMs: every format escapes them for its own
syntax, and the Cypher script only ever carries them inside string literals.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

import networkx as nx

from mem0g.types import Entity, Episode, GraphSnapshot, Relation, Tenant

FORMAT = "mem0g-graph"
VERSION = 1
FORMATS = ("json", "graphml", "cypher", "mermaid", "html")


def _tenant_fields(tenant: Tenant) -> dict[str, str | None]:
    return {"user_id": tenant.user_id, "agent_id": tenant.agent_id, "run_id": tenant.run_id}


# ---------------------------------------------------------------- JSON


def to_json(snapshot: GraphSnapshot, *, tenant: Tenant | None = None, indent: int = 2) -> str:
    """Every field but embeddings (they are large and derived), datetimes in ISO-8601.

    No export timestamp: the same graph always dumps to the same text, so dumps diff cleanly.
    """
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "tenant": None if tenant is None else _tenant_fields(tenant),
        "entities": [e.model_dump(mode="json", exclude={"embedding"}) for e in snapshot.entities],
        "relations": [r.model_dump(mode="json", exclude={"embedding"}) for r in snapshot.relations],
        "facts": [f.model_dump(mode="json", exclude={"embedding"}) for f in snapshot.facts],
    }
    return json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"


def from_json(text: str) -> GraphSnapshot:
    """Read a `to_json` dump back (for restores and round-trip checks)."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} JSON dump")
    if doc.get("version") != VERSION:
        raise ValueError(f"unsupported {FORMAT} version {doc.get('version')!r}")
    return GraphSnapshot(
        entities=doc["entities"], relations=doc["relations"], facts=doc.get("facts", [])
    )


# ---------------------------------------------------------------- GraphML


# Characters XML 1.0 cannot hold at all, not even as character references.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _graphml_value(value: Any) -> str | int | float | bool:
    """GraphML holds scalars only: datetimes become ISO strings, lists JSON strings, and
    characters XML cannot carry become U+FFFD (the JSON dump is the lossless one)."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (list, dict)):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        return _NOT_XML.sub("\ufffd", value)
    scalar: str | int | float | bool = value  # numbers and booleans as they are
    return scalar


def _xml_id(value: str) -> str:
    """A node id or edge key as XML can hold it (ids are the store's, but an imported archive
    may bring any text)."""
    return _NOT_XML.sub("\ufffd", value)


def _attrs(pairs: dict[str, Any]) -> dict[str, Any]:
    return {k: _graphml_value(v) for k, v in pairs.items() if v is not None}


def to_networkx(snapshot: GraphSnapshot) -> nx.MultiDiGraph[str]:
    """Entities as nodes (keyed by id), relations as keyed edges (key = relation id)."""
    graph: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    for e in snapshot.entities:
        graph.add_node(
            _xml_id(e.id),
            **_attrs(
                {
                    "label": e.name,
                    "name": e.name,
                    "type": e.type,
                    "aliases": e.aliases or None,
                    **_tenant_fields(e.tenant),
                    "created_at": e.created_at,
                    "updated_at": e.updated_at,
                }
            ),
        )
    for r in snapshot.relations:
        graph.add_edge(
            _xml_id(r.source_id),
            _xml_id(r.destination_id),
            key=_xml_id(r.id),
            **_attrs(
                {
                    "label": r.relation,
                    "relation": r.relation,
                    "source": r.source,
                    "destination": r.destination,
                    **_tenant_fields(r.tenant),
                    "valid_from": r.valid_from,
                    "invalid_at": r.invalid_at,
                    "created_at": r.created_at,
                    "updated_at": r.updated_at,
                    "mentions": r.mentions,
                    "episode_ids": [p.episode_id for p in r.provenance] or None,
                }
            ),
        )
    return graph


def to_graphml(snapshot: GraphSnapshot) -> str:
    """GraphML via networkx's writer, readable by Gephi, yEd and `nx.read_graphml`."""
    buffer = io.BytesIO()
    nx.write_graphml(to_networkx(snapshot), buffer, encoding="utf-8")
    return buffer.getvalue().decode("utf-8")


# ---------------------------------------------------------------- Cypher

_CYPHER_ESCAPES = {
    "\\": "\\\\",
    "'": "\\'",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}


def cypher_literal(value: Any) -> str:
    """The Cypher literal for a value; strings are single-quoted and fully escaped.

    The one place user/LLM text enters a script. Printable characters stay as they are;
    quotes, backslashes and every non-printable one (controls, line separators, bidi
    overrides, lone surrogates) are escaped, so no name can end the literal or hide code.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Cypher has no literal for {value!r}")
        return repr(value)
    if isinstance(value, datetime):
        return f"datetime({cypher_literal(value.isoformat())})"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cypher_literal(v) for v in value) + "]"
    if not isinstance(value, str):
        raise TypeError(f"no Cypher literal for {type(value).__name__}")
    out = []
    for ch in value:
        if ch in _CYPHER_ESCAPES:
            out.append(_CYPHER_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:  # UTF-16 units, like the Java strings Neo4j holds (astral = surrogate pair)
            units = ch.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{units[i : i + 2].hex()}" for i in range(0, len(units), 2))
    return "'" + "".join(out) + "'"


def _cypher_map(props: dict[str, Any]) -> str:
    """A property map; keys are our fixed names, never user text. Nulls are left out."""
    pairs = (f"{k}: {cypher_literal(v)}" for k, v in props.items() if v is not None)
    return "{" + ", ".join(pairs) + "}"


def _cypher_tenant(tenant: Tenant) -> dict[str, str | None]:
    """The three ids and `tenant_key` (`Tenant.key`), as the Neo4j store writes them: the
    store finds a database's tenants by their keys, so without it a loaded dump had none."""
    return {"tenant_key": tenant.key, **_tenant_fields(tenant)}


def _entity_props(e: Entity) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "type": e.type,
        "aliases": e.aliases,
        **_cypher_tenant(e.tenant),
        "created_at": e.created_at,
        "updated_at": e.updated_at,
    }


def _relation_props(r: Relation) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": r.relation,
        **_cypher_tenant(r.tenant),
        "valid_from": r.valid_from,
        "invalid_at": r.invalid_at,
        "created_at": r.created_at,
        "updated_at": r.updated_at,
        "mentions": r.mentions,
        # provenance as the store keeps it: two parallel lists (a property holds no maps)
        "episode_ids": [p.episode_id for p in r.provenance],
        "provenance_at": [p.timestamp for p in r.provenance],
    }


def to_cypher(snapshot: GraphSnapshot) -> str:
    """A script recreating the graph in an empty Neo4j (e.g. `cypher-shell -f dump.cypher`).

    One label (`Entity`) and one relationship type (`RELATES`, the relation in its `name`
    property), so no user text is ever an identifier.
    """
    lines = [
        f"// {FORMAT} v{VERSION}: {len(snapshot.entities)} entities, "
        f"{len(snapshot.relations)} relations",
        "CREATE CONSTRAINT mem0g_entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE;",
    ]
    lines += [f"CREATE (:Entity {_cypher_map(_entity_props(e))});" for e in snapshot.entities]
    lines += [
        f"MATCH (s:Entity {{id: {cypher_literal(r.source_id)}}}), "
        f"(d:Entity {{id: {cypher_literal(r.destination_id)}}}) "
        f"CREATE (s)-[:RELATES {_cypher_map(_relation_props(r))}]->(d);"
        for r in snapshot.relations
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- Mermaid

_MERMAID_ESCAPES = {
    "#": "#35;",  # first: the escapes below start with '#'
    '"': "#quot;",
    "<": "#lt;",
    ">": "#gt;",
    "&": "#amp;",
    "|": "#124;",
    "`": "#96;",
    "\\": "#92;",
    "%": "#37;",  # mermaid takes `%%{...}%%` (a directive) out of the text, labels included
    # mermaid drops the last ';' of a line matching `style.*:\S*#.*;` (a style line's colour),
    # labels included, and every code above ends with ';': with no ':' no line can match
    ":": "#58;",
}


def mermaid_label(text: str) -> str:
    """Text safe inside a quoted Mermaid label: entity codes, whitespace folded to spaces."""
    out = []
    for ch in text:
        if ch in _MERMAID_ESCAPES:
            out.append(_MERMAID_ESCAPES[ch])
        elif not ch.isprintable():
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def _nodes(snapshot: GraphSnapshot) -> Iterable[tuple[str, str]]:
    """(entity id, name) of every node, including edge endpoints missing from `entities`."""
    seen: set[str] = set()
    for e in snapshot.entities:
        if e.id not in seen:
            seen.add(e.id)
            yield e.id, e.name
    for r in snapshot.relations:
        for node_id, name in ((r.source_id, r.source), (r.destination_id, r.destination)):
            if node_id not in seen:
                seen.add(node_id)
                yield node_id, name


def to_mermaid(snapshot: GraphSnapshot) -> str:
    """A `flowchart LR` for docs and READMEs; ended facts are dashed with "(until DATE)"."""
    ids: dict[str, str] = {}
    lines = ["flowchart LR"]
    for node_id, name in _nodes(snapshot):
        ids[node_id] = f"n{len(ids) + 1}"
        lines.append(f'    {ids[node_id]}["{mermaid_label(name)}"]')
    for r in snapshot.relations:
        label = mermaid_label(r.relation)
        arrow = "-->"
        if r.invalid_at is not None:
            label += f" (until {r.invalid_at.date().isoformat()})"
            arrow = "-.->"
        lines.append(f'    {ids[r.source_id]} {arrow}|"{label}"| {ids[r.destination_id]}')
    return "\n".join(lines) + "\n"


def dump(
    snapshot: GraphSnapshot,
    fmt: str,
    *,
    tenant: Tenant | None = None,
    episodes: Iterable[Episode] = (),
) -> str:
    """Dispatch by format name (the CLI's `--format`). `episodes` is read by "html" only (the
    messages its edges came from)."""
    if fmt == "json":
        return to_json(snapshot, tenant=tenant)
    if fmt == "graphml":
        return to_graphml(snapshot)
    if fmt == "cypher":
        return to_cypher(snapshot)
    if fmt == "mermaid":
        return to_mermaid(snapshot)
    if fmt == "html":  # the explorer page, data and viewer in one offline file
        from mem0g.service.explorer import to_html

        return to_html(snapshot, tenant=tenant, episodes=episodes)
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def html_episodes(memory: Any, tenant: Tenant | None) -> list[Episode]:
    """The episodes an html dump of `tenant` (None: every tenant) shows messages from."""
    from mem0g.service.explorer import scope_episodes

    return scope_episodes(memory, tenant)


__all__ = [
    "FORMATS",
    "cypher_literal",
    "dump",
    "from_json",
    "html_episodes",
    "mermaid_label",
    "to_cypher",
    "to_graphml",
    "to_json",
    "to_mermaid",
    "to_networkx",
]
