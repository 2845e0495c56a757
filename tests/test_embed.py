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


_FILLER = " ".join(
    f"In week {i} the garden club weeded the rose beds, mulched the paths and watered the tomatoes."
    for i in range(1, 31)
)  # about 600 word pieces: well past MiniLM's 256
_TAIL = "Priya adopted a three-legged greyhound named Biscuit from the shelter."


def test_the_tail_of_a_long_text_counts(minilm) -> None:
    """MiniLM reads 256 word pieces; a long fact's later sentences must still be findable."""
    model = minilm.inner._model
    long_text = f"{_FILLER} {_TAIL}"
    assert len(model.tokenizer(long_text, add_special_tokens=False)["input_ids"]) > 512
    query, windowed, filler = minilm.embed(["Which dog did Priya adopt?", long_text, _FILLER])
    truncated = model.encode([long_text], normalize_embeddings=True)[0]
    assert np.isclose(np.linalg.norm(windowed), 1.0, atol=1e-5)
    assert query @ windowed > query @ truncated + 0.05  # truncation never saw the dog
    assert query @ windowed > query @ filler + 0.05
    assert windowed @ filler > 0.5  # still mostly about the garden, as the text is


def test_short_texts_are_embedded_as_the_model_does_and_in_order(minilm) -> None:
    model = minilm.inner._model
    texts = ["Alice lives in Paris", f"{_FILLER} {_TAIL}", "quarterly tax report"]
    together = minilm.inner.embed(texts)
    plain = model.encode([texts[0], texts[2]], normalize_embeddings=True)
    assert np.allclose(together[[0, 2]], plain, atol=1e-5)
    alone = minilm.inner.embed([texts[1]])
    assert np.allclose(together[1], alone[0], atol=1e-5)


def test_token_windows_cover_the_text_in_full_windows_then_the_rest(minilm) -> None:
    from mem0g.embed import _token_windows

    tokenizer = minilm.inner._model.tokenizer
    text = f"{_FILLER} {_TAIL}"
    total = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    spans = _token_windows(tokenizer, text, 254)
    assert spans is not None and len(spans) == -(-total // 254)
    assert sum(size for _, size in spans) == total
    assert [size for _, size in spans[:-1]] == [254] * (len(spans) - 1)
    assert 0 < spans[-1][1] <= 254
    assert "".join(piece for piece, _ in spans).replace(" ", "") == text.replace(" ", "")
    assert spans[-1][0].endswith("from the shelter.")
    assert _token_windows(tokenizer, "a short text", 254) is None


def test_truncate_is_the_models_own_cut() -> None:
    from mem0g.config import EmbedderConfig
    from mem0g.embed import make_embedder

    cut = make_embedder(EmbedderConfig(long_texts="truncate"))
    long_text = f"{_FILLER} {_TAIL}"
    plain = cut.inner._model.encode([long_text], normalize_embeddings=True)  # type: ignore[attr-defined]
    assert np.allclose(cut.embed([long_text]), plain, atol=1e-5)


def test_texts_are_encoded_in_batches_of_similar_length(minilm, monkeypatch) -> None:
    """A batch is padded to its longest text: short texts must not ride with a long one."""
    inner = minilm.inner
    texts = [f"note {i}: the cat sat on the mat" for i in range(30)]
    texts[7] = "garden " * 120  # 840 characters, 120 word pieces: one window
    texts[20] = "Alice lives in Paris"
    plain = inner._model.encode(texts, normalize_embeddings=True)
    calls: list[list[str]] = []
    real = inner._model.encode

    def spy(batch, **kwargs):
        calls.append(list(batch))
        return real(batch, **kwargs)

    monkeypatch.setattr(inner._model, "encode", spy)
    got = inner.embed(texts)
    assert np.allclose(got, plain, atol=1e-5)  # the same vectors, in the caller's order
    assert sorted(t for batch in calls for t in batch) == sorted(texts)
    assert [texts[7]] in calls  # the long one alone
    for batch in calls:
        assert len(batch) <= inner._batch_size
        assert len(batch) == 1 or len(batch) * max(map(len, batch)) <= inner._batch_chars
    assert len(calls) < len(texts)  # still batched
