"""Which existing edges the update resolver shows the LLM for a new triple
(resolve/updates.py): the edges it most likely replaces (same source, same relation) first,
then the most similar by embedding, at most `max_existing`; the same order whatever the hub
holds. Pure: a stand-in store and a recording LLM, no server."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import numpy as np

from mem0g.llm.protocol import ResolveUpdatesAnswer
from mem0g.resolve.updates import resolve_updates
from mem0g.types import Relation, Tenant

T = Tenant(user_id="u")
WHEN = datetime(2024, 1, 1, tzinfo=timezone.utc)


class Store:
    def __init__(self, edges: list[Relation]) -> None:
        self.edges = edges

    def relations_touching(
        self, scope: Tenant, ids: Any, validity: Any, **_: Any
    ) -> list[Relation]:
        return [e for e in self.edges if {e.source_id, e.destination_id} & set(ids)]


class LLM:
    def __init__(self) -> None:
        self.payloads: list[Any] = []

    def call(self, task: Any, payload: Any, usage: Any = None) -> Any:
        self.payloads.append(payload)
        return ResolveUpdatesAnswer(operations=[])


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=8)
    return [float(x) for x in v / np.linalg.norm(v)]


def _edge(src: str, rel: str, dst: str, vec: list[float] | None) -> Relation:
    return Relation(tenant=T, source_id=src, source=src, relation=rel, destination_id=dst,
                    destination=dst, embedding=vec)  # fmt: skip


def test_rivals_first_then_the_most_similar_at_most_s() -> None:
    rng = np.random.default_rng(3)
    new = _edge("diego", "works_at", "acme", _unit(rng))
    query = np.asarray(new.embedding)
    rival = _edge("diego", "works_at", "contoso", _unit(rng))
    hub = [_edge(f"p{i}", "works_at", "acme", _unit(rng)) for i in range(40)]
    blank = _edge("p99", "likes", "acme", None)  # an edge without a vector: never a crash
    llm = LLM()
    resolve_updates(llm, Store([*hub, blank, rival]), T, [new], reference_time=WHEN,
                    max_existing=5)  # type: ignore[arg-type]  # fmt: skip
    (payload,) = llm.payloads
    shown = [(e.source, e.destination) for e in payload.existing]
    assert shown[0] == ("diego", "contoso")
    by_cosine = sorted(hub, key=lambda e: -float(np.dot(query, e.embedding)))
    assert shown[1:] == [(e.source, e.destination) for e in by_cosine[:4]]


def test_an_identical_edge_is_a_noop_without_asking() -> None:
    rng = np.random.default_rng(4)
    vec = _unit(rng)
    old = _edge("diego", "works_at", "acme", vec)
    llm = LLM()
    out = resolve_updates(llm, Store([old]), T, [_edge("diego", "works_at", "acme", vec)],
                          reference_time=WHEN, max_existing=5)  # type: ignore[arg-type]  # fmt: skip
    assert llm.payloads == [] and out.decisions[0].duplicate_of == old
