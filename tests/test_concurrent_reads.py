"""A search's independent reads (entity linking, triple search, fact search) may run at once on
a read pool: on by default for Neo4j, whose reads wait on the server. The answers must be the
same as when they run one after another, and a failing read must still reach the caller."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from mem0g import Memory
from mem0g.config import RetrievalConfig
from mem0g.embed import CachedEmbedder
from mem0g.retrieve import DualRetriever
from mem0g.stores import EmbeddedGraphStore, StoreError
from mem0g.stores.base import StoreCapabilities
from mem0g.types import (
    Entity,
    Episode,
    Fact,
    FactEvent,
    Message,
    Relation,
    Tenant,
    WritePlan,
    triple_text,
)

ALICE = Tenant(user_id="alice")
NOW = datetime(2024, 5, 1, tzinfo=timezone.utc)
TRIPLES = [
    ("Alice", "works_at", "Acme"),
    ("Bob", "works_at", "Acme"),
    ("Carol", "works_at", "Acme"),
    ("Alice", "lives_in", "Paris"),
    ("Bob", "lives_in", "London"),
    ("Acme", "located_in", "Berlin"),
    ("Carol", "enjoys", "chess"),
    ("Alice", "friend_of", "Dave"),
]
FACTS = ["Alice is vegetarian", "Bob drinks tea", "Carol plays chess on Sundays"]
QUERIES = [
    "who works with Alice?",
    "where does Bob live?",
    "what does Carol enjoy?",
    "where is Acme based?",
    "who are Alice's friends?",
    "what does Alice eat?",
]


def _fill(store: Any, embedder: CachedEmbedder) -> None:
    """A small tenant graph and facts, written straight through the store (no LLM)."""
    names = sorted({n for s, _, d in TRIPLES for n in (s, d)})
    vectors = dict(zip(names, embedder.embed(names), strict=True))
    entities = {
        n: Entity(tenant=ALICE, name=n, keys=[n.lower()], embedding=vectors[n].tolist())
        for n in names
    }
    texts = [triple_text(*t) for t in TRIPLES]
    relations = [
        Relation(
            tenant=ALICE,
            source_id=entities[s].id,
            source=s,
            relation=r,
            destination_id=entities[d].id,
            destination=d,
            embedding=v.tolist(),
            valid_from=NOW,
        )
        for (s, r, d), v in zip(TRIPLES, embedder.embed(texts), strict=True)
    ]
    facts = [
        Fact(tenant=ALICE, text=t, embedding=v.tolist())
        for t, v in zip(FACTS, embedder.embed(FACTS), strict=True)
    ]
    episode = Episode(tenant=ALICE, messages=[Message(content="seed")], timestamp=NOW)
    store.apply(
        WritePlan(
            tenant=ALICE,
            episode=episode,
            new_entities=list(entities.values()),
            new_relations=relations,
            new_facts=facts,
            fact_events=[
                FactEvent(fact_id=f.id, tenant=ALICE, event="ADD", new_text=f.text) for f in facts
            ],
        )
    )


@pytest.fixture
def open_memory(
    store_kind: str, tmp_path: Path, hashing: CachedEmbedder, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Memory]]:
    """Memories over one filled store of the kind under test, each with its own settings."""
    made: list[Memory] = []
    if store_kind == "neo4j":
        connect = request.getfixturevalue("neo4j_connect")
        open_store: Callable[[], Any] = lambda: connect(dims=hashing.dims)  # noqa: E731
    else:
        open_store = lambda: EmbeddedGraphStore(tmp_path / "g", dims=hashing.dims)  # noqa: E731
    first = open_store()
    _fill(first, hashing)
    first.close()

    def memory(**retrieval: Any) -> Memory:
        m = Memory({"retrieval": retrieval}, embedder=hashing, store=open_store())
        made.append(m)
        return m

    yield memory
    for m in made:
        m.close()


def _answers(memory: Memory) -> list[Any]:
    out = []
    for query in QUERIES:
        hits = memory.search(query, user_id="alice", limit=5)
        out.append(
            (
                [(r.id, round(r.score, 9)) for r in hits.relations],
                [(e.id, e.matched_by) for e in hits.entities],
                [(f.id, round(f.score, 6)) for f in hits.facts],
            )
        )
    return out


def test_concurrent_reads_answer_like_sequential_ones(
    open_memory: Callable[..., Memory], store_kind: str
) -> None:
    default = open_memory()
    # on by default where reads are server round trips, off for the in-process store
    assert (default._reads is not None) == (store_kind == "neo4j")
    concurrent = open_memory(concurrent_reads=True)
    sequential = open_memory(concurrent_reads=False)
    assert concurrent._reads is not None and sequential._reads is None

    expected = _answers(sequential)
    assert all(relations for relations, _, _ in expected)  # the queries do find edges
    assert all(facts for _, _, facts in expected)
    assert _answers(concurrent) == expected
    assert _answers(default) == expected


def test_reads_run_on_the_pool_and_errors_reach_the_caller(
    open_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = open_memory(concurrent_reads=True)
    threads: dict[str, str] = {}
    # a store holding the names ranks them on the client after one read (`name_ranker`)
    names = "name_ranker" if memory.store.capabilities.held_names else "similar_entities"
    reads = ("similar_relations", names, "similar_facts", "find_entities")
    for name in reads:
        real = getattr(memory.store, name)

        def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            threads[_name] = threading.current_thread().name
            return _real(*args, **kwargs)

        monkeypatch.setattr(memory.store, name, spy)
    memory.search("who works with Alice?", user_id="alice")
    # every store read goes to the pool, the vector-free exact-name lookup too: it is sent
    # before the query is embedded, so its round trip overlaps the embedding
    for name in reads:
        assert threads[name].startswith("mem0g-read"), (name, threads[name])
    assert threading.current_thread().name not in set(threads.values())

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("the triple index is gone")

    monkeypatch.setattr(memory.store, "similar_relations", broken)
    with pytest.raises(StoreError, match="triple index is gone"):
        memory.search("who works with Alice?", user_id="alice")
    memory.close()
    assert memory._reads is not None and memory._reads._shutdown  # the pool went with it


class _Declared(EmbeddedGraphStore):
    """The embedded store declaring other capabilities: server-like reads, no BM25 reads."""

    capabilities = StoreCapabilities(concurrent_reads=True, lexical=False, fact_timeline=True)


def test_memory_and_the_retrievers_follow_the_declared_capabilities(
    tmp_path: Path, hashing: CachedEmbedder
) -> None:
    """What a store can do is read from `GraphStore.capabilities`, not from its methods: the
    embedded store (in-process reads) gets no read pool; a store declaring `concurrent_reads`
    gets one, and one declaring no `lexical` reads is never asked for BM25 rankings."""
    filled = EmbeddedGraphStore(tmp_path / "g", dims=hashing.dims)
    _fill(filled, hashing)
    filled.close()
    with Memory({}, embedder=hashing, store=EmbeddedGraphStore(tmp_path / "g")) as plain:
        assert plain._reads is None
        used = {name for q in QUERIES for hit in _hits(plain, q) for name in hit.sources}
        assert {"bm25_relations", "bm25_facts"} <= used
    with Memory({}, embedder=hashing, store=_Declared(tmp_path / "g")) as declared:
        assert declared._reads is not None
        used = {name for q in QUERIES for hit in _hits(declared, q) for name in hit.sources}
        assert used and not {"bm25_relations", "bm25_facts"} & used


def _hits(memory: Memory, query: str) -> list[Any]:
    found = memory.search(query, user_id="alice", limit=5)
    return [*found.relations, *found.facts]


def test_a_search_embeds_its_query_once(
    tmp_path: Path, hashing: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both halves of a search (relations and facts) share one query embedding: the
    retriever embeds it and hands it to the fact half (`DualRetriever.search(facts=True)`)."""
    store = EmbeddedGraphStore(tmp_path / "g", dims=hashing.dims)
    _fill(store, hashing)
    with Memory({}, embedder=hashing, store=store) as memory:
        calls: list[list[str]] = []
        embed = memory.embedder.embed
        monkeypatch.setattr(memory.embedder, "embed", lambda texts: (calls.append(list(texts)),
                                                                     embed(texts))[1])  # fmt: skip
        for query in QUERIES:
            calls.clear()
            found = memory.search(query, user_id="alice", limit=5)
            assert found.facts and found.relations
            assert calls == [[query]]


def test_a_store_holding_the_names_is_read_for_them_before_the_query_is_embedded(
    open_memory: Callable[..., Memory], store_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `held_names` (Neo4j) a search reads the scope's name vectors before it embeds the
    query (the read needs no vector, so it overlaps the embedding) and ranks them on the
    client: no vector read of entities goes to the server. The same entities are linked as
    by `similar_entities` (the next test compares the two stores' links)."""
    memory = open_memory(concurrent_reads=False)  # reads in call order
    store = memory.store
    assert store.capabilities.held_names == (store_kind == "neo4j")
    store.name_ranker(ALICE, wait=True)  # a search does not wait for the tenant's first read
    events: list[str] = []
    for name in ("name_ranker", "similar_entities"):
        real = getattr(store, name)

        def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            events.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(store, name, spy)
    embed = memory.embedder.embed
    monkeypatch.setattr(memory.embedder, "embed", lambda texts: (events.append("embed"),
                                                                 embed(texts))[1])  # fmt: skip
    for query in QUERIES:
        events.clear()
        found = memory.search(query, user_id="alice", limit=5)
        assert found.entities  # every query names someone
        if store_kind == "neo4j":
            assert events == ["name_ranker", "embed"]
        else:
            assert events == ["embed", "similar_entities"]


@pytest.mark.neo4j
def test_both_stores_link_the_same_names(
    tmp_path: Path, hashing: CachedEmbedder, neo4j_connect: Any
) -> None:
    """The names a search links: Neo4j ranks its held vectors on the client, the embedded
    store its own; the same names, order and scores (every top-k name, not only close ones)."""
    embedded = EmbeddedGraphStore(tmp_path / "g", dims=hashing.dims)
    server = neo4j_connect(dims=hashing.dims)
    for store in (embedded, server):
        _fill(store, hashing)
    assert server.name_ranker(ALICE, wait=True) is not None  # held: linking ranks it here
    config = RetrievalConfig(link_threshold=-1.0, link_top_k=6, concurrent_reads=False)
    for query in [*QUERIES, "Acme in Berlin", "nobody we know", "Dave and Carol play chess"]:
        qvec = hashing.embed([query])[0]
        got = [
            DualRetriever(store, hashing, config).link(query, qvec, ALICE)
            for store in (embedded, server)
        ]
        assert len(got[0]) >= 6
        assert [(h.name, h.matched_by) for h in got[1]] == [(h.name, h.matched_by) for h in got[0]]
        assert [h.score for h in got[1]] == pytest.approx([h.score for h in got[0]], abs=1e-6)
    embedded.close()
