"""Unit tests of the dump formats: each must parse back, and hostile names must survive intact
without ever changing the structure of the output."""

from __future__ import annotations

import io
import itertools
import json
import re
from datetime import datetime, timedelta, timezone

import networkx as nx
import pytest

from mem0g.export import (
    cypher_literal,
    dump,
    from_json,
    mermaid_label,
    to_cypher,
    to_graphml,
    to_json,
    to_mermaid,
)
from mem0g.types import Entity, GraphSnapshot, Provenance, Relation, Tenant

UTC = timezone.utc
T0 = datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
T1 = datetime(2024, 6, 1, tzinfo=UTC)

HOSTILE = [
    "Bob'}) DETACH DELETE n //",
    "x\\' OR 1=1 //",
    "\"double\" and 'single'",
    "back`tick`) MATCH (m) DETACH DELETE m //",
    "trailing backslash \\",
    "\\\\ two and \\n literal",
    "new\nline\r\nand\ttab",
    "nul\x00 bell\x07 esc\x1b del\x7f",
    "ünïcödé 東京 😀 \u202eevil\u202c \u2028sep \u200bzw",
    "lone \ud800 surrogate",
    "tag \U000e0041 char",
    "/* comment */ -- and ; semicolon",
    "[red]markup[/red] <b>&amp;</b> #quot; |pipe|",
]

TENANT = Tenant(user_id="alice", run_id="r1")


_clock = itertools.count()


def _tick() -> datetime:
    """Distinct creation times: snapshots sort records by them, and tests rely on the order."""
    return T0 + timedelta(seconds=next(_clock))


def _entity(name: str, type_: str = "person", **extra: object) -> Entity:
    when = _tick()
    return Entity(tenant=TENANT, name=name, type=type_, created_at=when, updated_at=when, **extra)


def _relation(src: Entity, rel: str, dst: Entity, **extra: object) -> Relation:
    when = _tick()
    fields: dict[str, object] = {
        "valid_from": T0,
        "created_at": when,
        "updated_at": when,
        "provenance": [Provenance(episode_id="ep1", timestamp=T0)],
        **extra,
    }
    return Relation(
        tenant=TENANT,
        source_id=src.id,
        source=src.name,
        relation=rel,
        destination_id=dst.id,
        destination=dst.name,
        **fields,  # type: ignore[arg-type]
    )


@pytest.fixture
def snapshot() -> GraphSnapshot:
    alice = _entity("Alice", aliases=["Al", "Ally"], embedding=[0.6, 0.8])
    paris = _entity("Paris", "city")
    berlin = _entity("Berlin", "city")
    hostile = [_entity(name, "thing") for name in HOSTILE]
    relations = [
        _relation(alice, "lives_in", paris, invalid_at=T1, embedding=[1.0, 0.0]),
        _relation(alice, "lives_in", berlin, valid_from=T1, mentions=3),
        _relation(alice, "visited", paris),  # a parallel edge to the first one
        *(_relation(alice, f"knows {h.name}", h) for h in hostile),
    ]
    return GraphSnapshot(entities=[alice, paris, berlin, *hostile], relations=relations)


# ---------------------------------------------------------------- JSON


def rel_created(snapshot: GraphSnapshot, rel_id: str) -> datetime:
    return next(r.created_at for r in snapshot.relations if r.id == rel_id)


def test_json_header_fields_and_no_embeddings(snapshot: GraphSnapshot) -> None:
    doc = json.loads(to_json(snapshot, tenant=TENANT))
    assert (doc["format"], doc["version"]) == ("mem0g-graph", 1)
    assert doc["tenant"] == {"user_id": "alice", "agent_id": None, "run_id": "r1"}
    assert len(doc["entities"]) == len(snapshot.entities)
    assert len(doc["relations"]) == len(snapshot.relations)
    assert all("embedding" not in record for record in doc["entities"] + doc["relations"])
    rel = next(r for r in doc["relations"] if r["invalid_at"])
    assert rel["invalid_at"] == "2024-06-01T00:00:00Z"
    assert datetime.fromisoformat(rel["created_at"].replace("Z", "+00:00")) == rel_created(
        snapshot, rel["id"]
    )
    assert rel["provenance"] == [{"episode_id": "ep1", "timestamp": "2024-01-02T03:04:05.678000Z"}]


def test_json_round_trip(snapshot: GraphSnapshot) -> None:
    back = from_json(to_json(snapshot))
    expected = GraphSnapshot(
        entities=[e.model_copy(update={"embedding": None}) for e in snapshot.entities],
        relations=[r.model_copy(update={"embedding": None}) for r in snapshot.relations],
    )
    assert back == expected
    assert [e.name for e in back.entities][3:] == HOSTILE
    assert to_json(snapshot) == to_json(snapshot)  # deterministic: dumps diff cleanly


def test_from_json_rejects_other_documents() -> None:
    with pytest.raises(ValueError, match="not a mem0g-graph"):
        from_json('{"entities": []}')
    with pytest.raises(ValueError, match="version"):
        from_json('{"format": "mem0g-graph", "version": 99, "entities": [], "relations": []}')


# ---------------------------------------------------------------- GraphML


def test_graphml_parses_back_with_nodes_edges_and_attributes(snapshot: GraphSnapshot) -> None:
    text = to_graphml(snapshot)
    graph = nx.read_graphml(io.BytesIO(text.encode("utf-8")), force_multigraph=True)
    assert isinstance(graph, nx.MultiDiGraph)
    assert set(graph.nodes) == {e.id for e in snapshot.entities}
    assert {(u, v, k) for u, v, k in graph.edges(keys=True)} == {
        (r.source_id, r.destination_id, r.id) for r in snapshot.relations
    }
    alice = snapshot.entities[0]
    node = graph.nodes[alice.id]
    assert node["name"] == node["label"] == "Alice"
    assert node["type"] == "person"
    assert json.loads(node["aliases"]) == ["Al", "Ally"]
    assert node["user_id"] == "alice" and node["run_id"] == "r1"
    assert "agent_id" not in node  # None values are omitted
    assert "embedding" not in node
    assert node["created_at"] == alice.created_at.isoformat()

    ended, moved = snapshot.relations[0], snapshot.relations[1]
    edge = graph.edges[ended.source_id, ended.destination_id, ended.id]
    assert edge["relation"] == "lives_in"
    assert edge["invalid_at"] == T1.isoformat()
    assert json.loads(edge["episode_ids"]) == ["ep1"]
    edge = graph.edges[moved.source_id, moved.destination_id, moved.id]
    assert edge["mentions"] == 3
    assert "invalid_at" not in edge


def test_graphml_keeps_hostile_names_and_replaces_what_xml_cannot_hold(
    snapshot: GraphSnapshot,
) -> None:
    graph = nx.read_graphml(io.BytesIO(to_graphml(snapshot).encode()), force_multigraph=True)
    names = {graph.nodes[e.id]["name"]: e.name for e in snapshot.entities}
    for got, want in names.items():
        if want.startswith("nul"):
            assert got == "nul\ufffd bell\ufffd esc\ufffd del\x7f"
        elif want.startswith("lone"):
            assert got == "lone \ufffd surrogate"
        elif "\r" not in want:  # XML parsers normalise CR; JSON is the lossless dump
            assert got == want


def test_graphml_ids_xml_cannot_hold_are_replaced_too() -> None:
    """Ids are the store's own, but an imported archive can bring any text: an id holding a
    control character made the whole GraphML dump ill-formed XML."""
    odd = Entity(id="a\x00b", tenant=TENANT, name="A", created_at=T0, updated_at=T0)
    plain = Entity(id="c", tenant=TENANT, name="C", created_at=T1, updated_at=T1)
    edge = _relation(odd, "x", plain).model_copy(update={"id": "r\x1f"})
    text = to_graphml(GraphSnapshot(entities=[odd, plain], relations=[edge]))
    graph = nx.read_graphml(io.BytesIO(text.encode()), force_multigraph=True)
    assert sorted(graph.nodes) == ["a\ufffdb", "c"]
    assert list(graph.edges(keys=True)) == [("a\ufffdb", "c", "r\ufffd")]
    assert graph.nodes["a\ufffdb"]["name"] == "A"


# ---------------------------------------------------------------- Mermaid


def test_mermaid_structure_ids_and_dashed_history(snapshot: GraphSnapshot) -> None:
    text = to_mermaid(snapshot)
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    nodes = [line for line in lines if re.fullmatch(r'    n\d+\["[^"]*"\]', line)]
    edges = [line for line in lines if re.fullmatch(r'    n\d+ (-->|-\.->)\|"[^"|]*"\| n\d+', line)]
    assert len(nodes) == len(snapshot.entities)
    assert len(edges) == len(snapshot.relations)
    assert len(lines) == 1 + len(nodes) + len(edges)  # nothing escaped its line
    assert lines[1] == '    n1["Alice"]'
    assert '    n1 -.->|"lives_in (until 2024-06-01)"| n2' in lines
    assert '    n1 -->|"lives_in"| n3' in lines


def test_mermaid_label_escapes() -> None:
    assert mermaid_label('say "hi"') == "say #quot;hi#quot;"
    assert mermaid_label("#1 <b>&|`\\") == "#35;1 #lt;b#gt;#amp;#124;#96;#92;"
    assert mermaid_label("two\nlines\x00") == "two lines "
    assert mermaid_label("東京 😀") == "東京 😀"


def test_mermaid_names_cannot_hold_a_directive_or_comment() -> None:
    """Mermaid takes `%%{...}%%` (a directive) out of the whole text before it parses, labels
    included: a name holding one emptied its node's label, a parse error that lost the whole
    diagram (mermaid 11), or could set the diagram's config. No `%` reaches the text."""
    directive = "%%{init: {'theme': 'forest'}}%%"
    alice, other = _entity("Alice"), _entity(directive)
    text = to_mermaid(
        GraphSnapshot(entities=[alice, other], relations=[_relation(alice, "50%% off", other)])
    )
    assert "%" not in text
    assert "    n2[\"#37;#37;{init#58; {'theme'#58; 'forest'}}#37;#37;\"]" in text.splitlines()
    assert '    n1 -->|"50#37;#37; off"| n2' in text.splitlines()


def test_mermaid_text_is_untouched_by_the_style_pre_pass() -> None:
    """Before parsing, mermaid (11) drops the last ';' of every line matching
    `style.*:\\S*#.*;` or `classDef.*:\\S*#.*;` (it means a style line's colour), and
    every entity code this module writes starts with '#' and ends with ';': a name like
    'style: "x"' rendered as '"x#quot'. No ':' reaches the text, so no line can match."""
    names = ['style: "x"', "style n1 fill:#f00", "classDef c fill:#0f0;", "time: 10:30 <b>"]
    alice = _entity("Alice")
    others = [_entity(name) for name in names]
    text = to_mermaid(
        GraphSnapshot(
            entities=[alice, *others],
            relations=[_relation(alice, n, o) for n, o in zip(names, others, strict=True)],
        )
    )
    pre_pass = re.compile(r"(?:style|classDef).*:\S*#.*;")
    assert not [line for line in text.splitlines() if pre_pass.search(line)]
    assert mermaid_label("style: a") == "style#58; a"


# ---------------------------------------------------------------- Cypher

_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}


def _read_literal(text: str, start: int) -> tuple[str, int]:
    """Reference unescaper of one Cypher string literal at text[start] (a quote), per the
    Cypher manual; returns (value, index after the closing quote). UTF-16 units are joined
    at the end, as Java (and Neo4j) strings are UTF-16."""
    quote = text[start]
    units = bytearray()
    i = start + 1
    while True:
        ch = text[i]
        if ch == quote:
            return units.decode("utf-16-be", "surrogatepass"), i + 1
        if ch == "\n":
            raise AssertionError("raw newline inside a literal")
        if ch != "\\":
            units += ch.encode("utf-16-be", "surrogatepass")
            i += 1
            continue
        kind = text[i + 1]
        if kind in _ESCAPES:
            units += _ESCAPES[kind].encode("utf-16-be")
            i += 2
        elif kind in "uU":
            width = 4 if kind == "u" else 8
            digits = text[i + 2 : i + 2 + width]
            assert re.fullmatch(r"[0-9a-fA-F]+", digits) and len(digits) == width, digits
            units += chr(int(digits, 16)).encode("utf-16-be", "surrogatepass")
            i += 2 + width
        else:
            raise AssertionError(f"unknown escape \\{kind}")


def _lex(script: str) -> tuple[str, list[str]]:
    """Split a script into its code (literals replaced by `?`, comments dropped) and the
    decoded string literals, in order."""
    code: list[str] = []
    literals: list[str] = []
    i = 0
    while i < len(script):
        ch = script[i]
        if ch in "'\"":
            value, i = _read_literal(script, i)
            literals.append(value)
            code.append("?")
        elif script.startswith("//", i):
            i = script.index("\n", i)
        else:
            code.append(ch)
            i += 1
    return "".join(code), literals


@pytest.mark.parametrize("value", HOSTILE)
def test_cypher_literal_round_trips_verbatim(value: str) -> None:
    literal = cypher_literal(value)
    decoded, end = _read_literal(literal, 0)
    assert decoded == value
    assert end == len(literal)  # the literal ends exactly where it should
    assert "\n" not in literal and "\r" not in literal
    assert all(ch.isprintable() for ch in literal)


def test_cypher_literal_other_values() -> None:
    assert cypher_literal(None) == "null"
    assert cypher_literal(True) == "true"
    assert cypher_literal(3) == "3"
    assert cypher_literal(0.25) == "0.25"
    assert cypher_literal(["a", "b'"]) == "['a', 'b\\'']"
    assert cypher_literal(T1) == "datetime('2024-06-01T00:00:00+00:00')"
    with pytest.raises(ValueError):
        cypher_literal(float("nan"))
    with pytest.raises(TypeError):
        cypher_literal(object())


_SCALAR = r"(?:\?|datetime\(\?\)|\d+)"
_VALUE = rf"(?:{_SCALAR}|\[(?:{_SCALAR}(?:, {_SCALAR})*)?\])"
_MAP = rf"\{{\w+: {_VALUE}(?:, \w+: {_VALUE})*\}}"
_STATEMENTS = [
    re.compile(r"CREATE CONSTRAINT mem0g_entity_id IF NOT EXISTS FOR \(e:Entity\) "
               r"REQUIRE e\.id IS UNIQUE;"),
    re.compile(rf"CREATE \(:Entity {_MAP}\);"),
    re.compile(rf"MATCH \(s:Entity \{{id: \?\}}\), \(d:Entity \{{id: \?\}}\) "
               rf"CREATE \(s\)-\[:RELATES {_MAP}\]->\(d\);"),
]  # fmt: skip


def test_cypher_script_structure_survives_hostile_names(snapshot: GraphSnapshot) -> None:
    script = to_cypher(snapshot)
    code, literals = _lex(script)
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) == 1 + len(snapshot.entities) + len(snapshot.relations)
    for line in lines:
        assert any(p.fullmatch(line) for p in _STATEMENTS), line
    assert "DELETE" not in code and "`" not in code
    for name in HOSTILE:
        assert name in literals  # entity names
        assert f"knows {name}" in literals  # relation names, carried as a property
    assert "Alice" in literals and "Al" in literals and "2024-06-01T00:00:00+00:00" in literals


def test_cypher_properties(snapshot: GraphSnapshot) -> None:
    script = to_cypher(snapshot)
    alice = snapshot.entities[0]
    create_alice = next(line for line in script.splitlines() if f"'{alice.id}', name" in line)
    assert "aliases: ['Al', 'Ally']" in create_alice
    assert "user_id: 'alice'" in create_alice and "run_id: 'r1'" in create_alice
    assert "agent_id" not in create_alice  # null properties are left out
    ended = snapshot.relations[0]
    line = next(line for line in script.splitlines() if f"id: '{ended.id}'" in line)
    assert "name: 'lives_in'" in line
    assert "invalid_at: datetime('2024-06-01T00:00:00+00:00')" in line
    assert "mentions: 1" in line and "episode_ids: ['ep1']" in line
    assert "provenance_at: [datetime('2024-01-02T03:04:05.678000+00:00')]" in line
    assert f"tenant_key: {cypher_literal(TENANT.key)}" in line
    assert f"tenant_key: {cypher_literal(TENANT.key)}" in create_alice


def test_dump_dispatch(snapshot: GraphSnapshot) -> None:
    assert dump(snapshot, "json") == to_json(snapshot)
    assert dump(snapshot, "graphml") == to_graphml(snapshot)
    assert dump(snapshot, "cypher") == to_cypher(snapshot)
    assert dump(snapshot, "mermaid") == to_mermaid(snapshot)
    with pytest.raises(ValueError, match="unknown format") as raised:
        dump(snapshot, "csv")
    assert str(raised.value).endswith("choose one of json, graphml, cypher, mermaid, html")
    assert dump(snapshot, "html").startswith("<!doctype html>")


def test_empty_snapshot() -> None:
    empty = GraphSnapshot()
    assert from_json(to_json(empty)) == empty
    assert to_mermaid(empty) == "flowchart LR\n"
    assert len(to_cypher(empty).splitlines()) == 2
    graph = nx.read_graphml(io.BytesIO(to_graphml(empty).encode()))
    assert graph.number_of_nodes() == 0
