"""What the update resolver (resolve/updates.py) shows the LLM for a new triple: the store's
`update_candidates` (ranked by the store: identical, rivals, cosine; the contract's test is
in test_store_contract.py), at most `max_existing`; an identical edge is a NOOP without an
LLM call. A real embedded store and a recording LLM, no server."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from mem0g.llm.protocol import ResolveUpdatesAnswer
from mem0g.resolve.updates import resolve_updates
from mem0g.stores import EmbeddedGraphStore
from mem0g.types import Entity, Episode, Message, Relation, Tenant, WritePlan

T = Tenant(user_id="u")
WHEN = datetime(2024, 1, 1, tzinfo=timezone.utc)


class LLM:
    def __init__(self) -> None:
        self.payloads: list[Any] = []

    def call(self, task: Any, payload: Any, usage: Any = None) -> Any:
        self.payloads.append(payload)
        return ResolveUpdatesAnswer(operations=[])


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=8)
    return [float(x) for x in v / np.linalg.norm(v)]


def _world(tmp_path: Path, rng: np.random.Generator) -> tuple[EmbeddedGraphStore, dict[str, Any]]:
    store = EmbeddedGraphStore(tmp_path / "g", dims=8)
    names = ["Diego", "Acme", "Contoso", *(f"Staff {i}" for i in range(30))]
    ents = {n: Entity(tenant=T, name=n, keys=[n.lower()], embedding=_unit(rng)) for n in names}

    def edge(src: str, rel: str, dst: str, vec: list[float] | None = None) -> Relation:
        s, d = ents[src], ents[dst]
        return Relation(tenant=T, source_id=s.id, source=src, relation=rel, destination_id=d.id,
                        destination=dst, embedding=vec or _unit(rng))  # fmt: skip

    edges = [edge("Diego", "works_at", "Contoso")]
    edges += [edge(f"Staff {i}", "works_at", "Acme") for i in range(30)]
    episode = Episode(tenant=T, messages=[Message(content="x")], timestamp=WHEN)
    store.apply(WritePlan(tenant=T, episode=episode, new_entities=list(ents.values()),
                          new_relations=edges))  # fmt: skip
    return store, {"ents": ents, "edges": edges, "edge": edge}


def test_the_llm_sees_the_rival_and_at_most_s_edges_of_a_busy_hub(tmp_path: Path) -> None:
    store, w = _world(tmp_path, np.random.default_rng(3))
    new = w["edge"]("Diego", "works_at", "Acme")
    llm = LLM()
    resolve_updates(llm, store, T, [new], reference_time=WHEN, max_existing=5)  # type: ignore[arg-type]
    (payload,) = llm.payloads
    shown = [(e.source, e.destination) for e in payload.existing]
    assert len(shown) == 5 and shown[0] == ("Diego", "Contoso")
    query = np.asarray(new.embedding)
    hub = sorted(w["edges"][1:], key=lambda e: -float(np.dot(query, e.embedding)))
    assert shown[1:] == [(e.source, e.destination) for e in hub[:4]]


def test_an_identical_edge_is_a_noop_without_asking(tmp_path: Path) -> None:
    store, w = _world(tmp_path, np.random.default_rng(4))
    old = w["edges"][0]
    again = w["edge"]("Diego", "works_at", "Contoso")
    llm = LLM()
    out = resolve_updates(llm, store, T, [again], reference_time=WHEN, max_existing=5)  # type: ignore[arg-type]
    assert llm.payloads == [] and out.decisions[0].duplicate_of is not None
    assert out.decisions[0].duplicate_of.id == old.id
