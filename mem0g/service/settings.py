"""Service settings: where to bind, the keys file, the request limits and the job queue.

A section of its own (`MEM0G_SERVICE_*` env vars, or a `service` object in `mem0g serve`'s
`--service-config` JSON file) rather than a part of `MemoryConfig`, so `Memory` users never see
service knobs and the same `--config` file configures both.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Limits(BaseModel):
    """Bounds on one request, enforced before `Memory` is called (and shown in the OpenAPI
    schema, so clients and fuzzers see them)."""

    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(default=1_048_576, ge=1024, description="request body size")
    max_messages: int = Field(default=100, ge=1, description="messages in one add")
    max_query_chars: int = Field(default=2000, ge=1, description="search/context query length")
    max_limit: int = Field(default=100, ge=1, description="largest `limit` of a search")
    max_id_chars: int = Field(default=256, ge=1, description="user_id / agent_id / run_id")


class QueueSettings(BaseModel):
    """The async ingestion queue: in memory and bounded (jobs do not survive a restart)."""

    model_config = ConfigDict(extra="forbid")

    max_pending: int = Field(default=1000, ge=1, description="queued + running jobs, all tenants")
    max_pending_per_key: int = Field(
        default=250, ge=1, description="queued + running jobs of one API key (with a keys file)"
    )
    workers: int = Field(default=4, ge=1, description="tenants applied at once")
    keep_finished: int = Field(default=10_000, ge=0, description="finished jobs kept for GET")
    drain_seconds: float = Field(default=30.0, ge=0, description="shutdown waits this long")


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MEM0G_SERVICE_", env_nested_delimiter="__", extra="forbid"
    )

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    keys_file: Path | None = None
    inference_threads: int | None = Field(
        default=1,
        ge=1,
        description="OpenMP/torch threads per embedding call (None: the library's default)",
    )
    ready_after_warmup: bool = Field(
        default=True,
        description="/readyz answers 503 while the store's warm-up of a freshly started "
        "Neo4j server runs (graph_store.warmup), so a load balancer sends the first searches "
        "to a warm server; the probe then reads nothing from the store, which the warm-up "
        "would stand aside for",
    )
    gc_freeze: bool = Field(
        default=True,
        description="move the objects alive once the service started (the embedding model, "
        "torch, the libraries, the store's records) out of Python's cyclic garbage collector "
        "(gc.freeze), so a full collection scans only what came after: with MiniLM loaded it "
        "took ~300 ms, a pause of whichever request triggered it",
    )
    limits: Limits = Field(default_factory=Limits)
    queue: QueueSettings = Field(default_factory=QueueSettings)


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, "localhost")."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, keys_configured: bool) -> None:
    """Refuse to serve beyond loopback without API keys: an open memory on a network is a leak."""
    if not keys_configured and not is_loopback(host):
        raise ValueError(
            f"refusing to bind {host!r} without API keys: set a keys file "
            "(--keys / MEM0G_SERVICE_KEYS_FILE) or bind 127.0.0.1"
        )


def limit_inference_threads(threads: int | None) -> None:
    """One OpenMP thread per embedding call in a server, unless OMP_NUM_THREADS says otherwise.

    Requests run on a pool of threads, and OpenMP gives each calling thread a team of its own
    (as many threads as cores), so a served search did ~30x the work of an in-process one
    (420 ms against 14 ms for MiniLM on 2 busy cores, measured; docs/benchmarks.md). Called
    before the embedder loads torch; a torch already loaded is told too."""
    if threads is None or "OMP_NUM_THREADS" in os.environ:
        return
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
