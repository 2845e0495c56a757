"""LLM access for the harness: one response cache keyed by content, for mem0g's own calls
(ingestion) and for the answer and judge calls.

The key is the SHA-256 of the model, the messages and every other request parameter, so the
same request is answered from the cache in any run that shares the cache file; a cached answer
makes no network call. Judge runs differ by a `run` marker in the key (temperature 0 on a real
API is not always deterministic, and the report gives the runs' spread).

A rerun in the same run directory reuses its store and records, so it asks nothing already
done. A new run directory sharing the cache (`--cache FILE`) replays ingestion from the cache
as long as the requests are the same; `resolve_updates` and `update_memory` payloads quote the
stored records' `created_at` (system time), so those calls are asked again in a new store.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from mem0g.config import LLMConfig
from mem0g.eval.data import EvalInputError
from mem0g.llm.client import PROCESS_LIMIT, LLMClient


def cache_key(params: dict[str, Any]) -> str:
    return hashlib.sha256(
        json.dumps(params, sort_keys=True, ensure_ascii=False, default=str).encode()
    ).hexdigest()


class ResponseCache:
    """A SQLite table key -> response JSON; safe across threads (one connection, a lock)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT)")
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
            return str(row[0])

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, value))
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CallCounter:
    """Network calls actually made (cache misses), per purpose."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def add(self, purpose: str) -> None:
        with self._lock:
            self.calls[purpose] = self.calls.get(purpose, 0) + 1

    @property
    def total(self) -> int:
        return sum(self.calls.values())


class _Completions:
    def __init__(self, owner: CachingOpenAI) -> None:
        self._owner = owner

    def create(self, **kwargs: Any) -> ChatCompletion:
        return self._owner.create(**kwargs)


class _Chat:
    def __init__(self, owner: CachingOpenAI) -> None:
        self.completions = _Completions(owner)


class CachingOpenAI:
    """Stands in for `openai.OpenAI` where mem0g's LLMClient expects it: chat completions go
    through the cache; everything else (models.list) goes to the real client."""

    def __init__(
        self, inner: Any, cache: ResponseCache, counter: CallCounter, purpose: str = "memory"
    ) -> None:
        self._inner = inner
        self._cache = cache
        self._counter = counter
        self._purpose = purpose
        self.chat = _Chat(self)
        self.models = inner.models

    def create(self, **kwargs: Any) -> ChatCompletion:
        key = cache_key(kwargs)
        hit = self._cache.get(key)
        if hit is not None:
            return ChatCompletion.model_validate_json(hit)
        response: ChatCompletion = self._inner.chat.completions.create(**kwargs)
        self._counter.add(self._purpose)
        self._cache.put(key, response.model_dump_json())
        return response


def openai_client(base_url: str | None, api_key: str | None, timeout: float = 120.0) -> Any:
    if not (base_url or api_key):
        raise EvalInputError(
            "full mode needs an LLM: set OPENAI_API_KEY, or give --llm-base-url / "
            "MEM0G_LLM__BASE_URL for a local OpenAI-compatible server"
        )
    return openai.OpenAI(
        api_key=api_key or "not-needed", base_url=base_url, timeout=timeout, max_retries=2
    )


def check_reachable(client: Any, what: str) -> None:
    """Fail before any work when an endpoint does not answer (`GET /models`)."""
    try:
        client.with_options(max_retries=0, timeout=10).models.list()
    except openai.APIStatusError as err:
        if err.status_code in (401, 403):
            raise EvalInputError(f"the {what} LLM rejected the key: {err}") from None
        # some servers have no /models; reachable is what matters here
    except openai.APIError as err:
        raise EvalInputError(
            f"the {what} LLM at {client.base_url} is not reachable: {err}"
        ) from None


class ChatLLM:
    """Plain chat completions for answering and judging, through the cache."""

    def __init__(
        self,
        client: Any,
        model: str,
        cache: ResponseCache,
        counter: CallCounter,
        purpose: str,
        max_tokens: int | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.cache = cache
        self.counter = counter
        self.purpose = purpose
        self.max_tokens = max_tokens

    def complete(
        self, system: str, user: str, *, temperature: float = 0.0, run: int = 0
    ) -> dict[str, Any]:
        """{"text", "prompt_tokens", "completion_tokens", "cached", "ms"}."""
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": temperature,
        }
        if self.max_tokens:
            params["max_tokens"] = self.max_tokens
        key = cache_key({"run": run, **params})
        started = time.perf_counter()
        hit = self.cache.get(key)
        if hit is not None:
            value = json.loads(hit)
            return {**value, "cached": True, "ms": 0.0}
        try:
            with PROCESS_LIMIT:
                response = self.client.chat.completions.create(**params)
        except openai.APIError as err:
            raise RuntimeError(f"{self.purpose}: the LLM call failed: {err}") from err
        self.counter.add(self.purpose)
        text = (response.choices[0].message.content or "") if response.choices else ""
        used = response.usage
        value = {
            "text": text.strip(),
            "prompt_tokens": used.prompt_tokens if used else 0,
            "completion_tokens": used.completion_tokens if used else 0,
        }
        self.cache.put(key, json.dumps(value))
        return {**value, "cached": False, "ms": (time.perf_counter() - started) * 1000}


def memory_llm(config: LLMConfig, cache: ResponseCache, counter: CallCounter) -> LLMClient:
    """mem0g's own protocol client, its HTTP calls answered from the cache when seen before."""
    inner = openai_client(config.resolved_base_url(), config.resolved_api_key(), config.timeout)
    return LLMClient(config, client=CachingOpenAI(inner, cache, counter, "memory"))
