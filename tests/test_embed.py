"""Embedders: the bundled MiniLM loads offline by path; the cache and the hashing embedder."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from mem0g.embed import CachedEmbedder, HashingEmbedder, bundled_model_path


def test_bundled_model_is_the_hub_minilm() -> None:
    path = bundled_model_path()
    assert path is not None
    digest = hashlib.sha256((Path(path) / "model.safetensors").read_bytes()).hexdigest()
    assert digest.startswith("53aa5117") and digest.endswith("8d9db")


def test_minilm_vectors_are_unit_and_meaningful(minilm) -> None:
    v = minilm.embed(["Alice lives in Paris", "Alice resides in Paris", "quarterly tax report"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.8 > v[0] @ v[2]


class _Counting:
    dims = 8
    name = "counting"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def embed(self, texts):
        self.seen.append(list(texts))
        return HashingEmbedder(8).embed(texts)


def test_cache_embeds_each_text_once_in_one_batch() -> None:
    inner = _Counting()
    cache = CachedEmbedder(inner, size=3)
    first = cache.embed(["a", "b", "a"])
    assert inner.seen == [["a", "b"]]
    second = cache.embed(["b", "c"])
    assert inner.seen[-1] == ["c"]
    assert np.array_equal(first[1], second[0])
    cache.embed(["d", "e"])  # evicts the least recently used
    cache.embed(["a"])
    assert inner.seen[-1] == ["a"]
    assert cache.embed([]).shape == (0, 8)


def test_hashing_embedder_is_deterministic() -> None:
    a = HashingEmbedder(64).embed(["Alice", "alice", "Bob"])
    b = HashingEmbedder(64).embed(["Alice", "alice", "Bob"])
    assert np.array_equal(a, b)
    assert a[1] @ a[0] > a[2] @ a[0]
