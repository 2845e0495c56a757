"""Configuration: one pydantic-settings model, filled from a dict, MEM0G_* env vars and defaults.

Nested env vars use a double underscore: MEM0G_LLM__MODEL, MEM0G_GRAPH_STORE__PATH,
MEM0G_RESOLVER__THRESHOLD. The usual OPENAI_API_KEY / OPENAI_BASE_URL and NEO4J_URI /
NEO4J_USERNAME / NEO4J_PASSWORD are honoured as fallbacks where mem0g's own keys are unset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_data_dir() -> Path:
    """Where the embedded store lives when no path is given (the user's data dir)."""
    env = os.environ.get("MEM0G_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("mem0g", appauthor=False))


class Setting(NamedTuple):
    """A resolved setting and where it came from (shown by `mem0g doctor`)."""

    value: str | None
    source: str  # "config", an environment variable's name, "default" or "unset"


def resolve_setting(
    section: str, name: str, value: str | None, fallback_env: str, default: str | None = None
) -> Setting:
    """mem0g's own setting (config file, or its MEM0G_SECTION__NAME variable), else the usual
    variable (`fallback_env`), else the default."""
    own = f"MEM0G_{section}__{name}".upper()
    if value:
        env = next((v for k, v in os.environ.items() if k.upper() == own), None)
        return Setting(value, own if env == value else "config")
    if os.environ.get(fallback_env):
        return Setting(os.environ[fallback_env], fallback_env)
    return Setting(default, "default" if default is not None else "unset")


class _Section(BaseModel):
    """A typo in a config key is an error, not a silently ignored setting."""

    model_config = ConfigDict(extra="forbid")


class LLMConfig(_Section):
    provider: Literal["openai", "azure", "ollama", "vllm", "lmstudio", "openai-compatible"] = (
        "openai"
    )
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    temperature: float = 0.0
    max_tokens: int | None = None
    # tools: function calling (OpenAI, vLLM, Ollama); json_schema: response_format for servers
    # without tool support; json_object_schema: the llama.cpp server's variant
    # ({"type": "json_object", "schema": ...}); json: plain JSON mode as a last resort.
    mode: Literal["tools", "json_schema", "json_object_schema", "json"] = "tools"
    fallback: bool = Field(
        default=True,
        description="on an HTTP error about the structured-output part of a request, try the "
        "next mode (tools, json_schema, json_object_schema, json) and keep the one that works",
    )
    max_retries: int = Field(default=2, ge=0, description="re-asks after an invalid answer")
    timeout: float = Field(default=120.0, gt=0, description="seconds for one LLM answer")
    connect_timeout: float = Field(
        default=10.0, gt=0, description="seconds to reach the endpoint before giving up"
    )
    max_concurrency: int = Field(default=4, ge=1)
    api_version: str | None = None  # Azure only

    def resolved_base_url(self) -> str | None:
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None

    def resolved_api_key(self) -> str | None:
        return self.api_key or os.environ.get("OPENAI_API_KEY") or None

    def is_configured(self) -> bool:
        """An LLM is usable when there is a key or an explicit (e.g. local) endpoint."""
        return bool(self.resolved_api_key() or self.resolved_base_url())


class EmbedderConfig(_Section):
    provider: Literal["sentence-transformers", "openai", "hashing"] = "sentence-transformers"
    model: str | None = None  # None = the bundled all-MiniLM-L6-v2 (or text-embedding-3-small)
    dims: int | None = None
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    batch_size: int = 64
    cache_size: int = 20_000
    device: str = "cpu"
    batch_chars: int = Field(
        default=1000,
        ge=1,
        description="sentence-transformers: texts are encoded in batches of similar length of "
        "at most this many characters (and batch_size texts): a batch is padded to its "
        "longest text; measured on 2 CPU cores, raise it on a GPU",
    )
    long_texts: Literal["windows", "truncate"] = Field(
        default="windows",
        description="sentence-transformers: a text longer than the model's window (256 word "
        "pieces for MiniLM) is embedded as the token-weighted mean of its windows "
        "('windows': its tail stays searchable, at about 1.9x the embedding time of such a "
        "text) or cut at the window as the model does ('truncate')",
    )


class GraphStoreConfig(_Section):
    provider: Literal["embedded", "neo4j"] = "embedded"
    path: str | None = None  # embedded: a directory
    max_loaded_tenants: int | None = Field(
        default=1000,
        ge=1,
        description="embedded: the most tenants held in memory; past it, the tenants used "
        "longest ago leave memory and are read from the file again when a call needs them "
        "(a call's own tenants never leave during it). None: no bound, every tenant touched "
        "stays in memory",
    )
    url: str | None = None  # neo4j: bolt://host:7687
    username: str | None = None
    password: str | None = Field(default=None, repr=False)
    database: str | None = None
    connect_timeout: float = Field(
        default=30.0,
        gt=0,
        description="neo4j: seconds to reach the server (connect, handshake and login, or "
        "wait for a free connection of the pool) before a call fails; a server that "
        "accepts connections but does not answer otherwise holds each call 60 s",
    )
    entity_vectors: int = Field(
        default=250_000,
        ge=0,
        description="neo4j: entity name vectors held in memory (~1.5 KB each at 384 dims) so "
        "that entity resolution and a search's entity linking find the exact nearest names; "
        "a tenant (or search scope) with more entities, or 0 here, uses the server's "
        "approximate vector index",
    )

    warmup: bool = Field(
        default=True,
        description="neo4j: warm the server's read paths in the background when the store "
        "opens (and after reindex), so the first searches after a restart are not slow",
    )
    warmup_seconds: float = Field(
        # 30 s stopped it before its rounds settled; alone on a 2-core machine it settled
        # in 78-98 s at 10k edges (docs/benchmarks.md, 2026-12-06): it ends when settled
        default=120.0,
        gt=0,
        description="neo4j: the warm-up's bound, in seconds of its own work (the time it "
        "stands aside for real searches is not counted); it ends earlier once its rounds "
        "stop getting faster",
    )
    warmup_parallel: int = Field(
        default=2,
        ge=1,
        le=8,
        description="neo4j: sessions the warm-up reads on at once (it reads only while the "
        "store is idle)",
    )
    packed_reads: bool = Field(
        default=True,
        description="neo4j: every read sends its parameters in one map parameter, so the "
        "server plans each statement once, not again for each new length of a query text "
        "or an id list (the plan cache keys on string and list sizes)",
    )
    cypher_options: str = Field(
        default="",
        pattern=r"^([A-Za-z]+=[A-Za-z]+( [A-Za-z]+=[A-Za-z]+)*)?$",
        description="neo4j: Cypher query options put before every read statement, e.g. "
        "'expressionEngine=interpreted' (option=value words only)",
    )
    local_copy: str | None = Field(
        default=None,
        description="neo4j: a directory where this client keeps a copy of the tenants it "
        "searches (an embedded store). A search whose tenants the copy holds at the server's "
        "current versions is answered from it (the same results: the stores' parity), after "
        "one small read; any other search goes to Neo4j, and the copy catches up in the "
        "background. It survives restarts, so searches right after a server restart need not "
        "wait for its JIT. Off by default: it puts the tenants' data on this client's disk",
    )
    local_copy_tenants: int = Field(
        default=100,
        ge=1,
        description="neo4j: the most tenants the local copy holds; past it, the tenants "
        "searched longest ago are deleted from the copy (their searches go to Neo4j until "
        "they are searched, and so copied, again)",
    )

    plan_log: bool | None = Field(
        default=None,
        description="neo4j: keep the last plans each tenant's writers wrote, in the database, "
        "so that other clients' local copies catch up by applying them rather than copying "
        "the tenant whole; None: on when local_copy is set. Every writer of a tenant must keep "
        "it for a copy to catch up (a missing plan means a whole copy, never a wrong one)",
    )
    plan_log_keep: int = Field(
        default=100,
        ge=1,
        description="neo4j: plans kept per tenant by plan_log (the oldest deleted by the write "
        "that makes one too many); a copy further behind is copied whole",
    )

    def logs_plans(self) -> bool:
        """Whether this client's writes keep the plan log (plan_log, else local_copy)."""
        return self.plan_log if self.plan_log is not None else self.local_copy is not None

    @model_validator(mode="after")
    def _copy_needs_neo4j(self) -> GraphStoreConfig:
        if self.local_copy is not None and self.provider != "neo4j":
            raise ValueError("graph_store.local_copy keeps a copy of a Neo4j store: set "
                             "provider to neo4j, or leave local_copy unset")  # fmt: skip
        return self

    def resolved_path(self) -> Path:
        return Path(self.path).expanduser() if self.path else default_data_dir() / "graph"

    def resolved_url(self) -> Setting:
        return resolve_setting("graph_store", "url", self.url, "NEO4J_URI")

    def resolved_username(self) -> Setting:
        return resolve_setting("graph_store", "username", self.username, "NEO4J_USERNAME", "neo4j")

    def resolved_password(self) -> Setting:
        return resolve_setting("graph_store", "password", self.password, "NEO4J_PASSWORD")


DEFAULT_THRESHOLD = 0.84
"""Cosine at or above which two *descriptive* names whose structure says nothing (UNKNOWN) are
merged (mem0g.resolve.names). Proper names are never merged on cosine, whatever its value."""


class ResolverConfig(_Section):
    # calibrated on a labelled alias/near-miss set: docs/resolver-calibration.md
    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=0.0, le=1.0)
    candidates: int = Field(default=10, ge=1, description="entity candidates compared per name")
    max_existing: int = Field(default=10, ge=1, description="s: existing edges per new triple")


class FusionWeights(_Section):
    """The weight of each named ranking of a search (retrieve/fusion.py says what each is);
    0 leaves a ranking out of the score (it still shows in a hit's `sources`)."""

    dense_facts: float = Field(default=1.0, ge=0)
    bm25_facts: float = Field(default=1.0, ge=0)
    time: float = Field(default=0.5, ge=0)
    dense_relations: float = Field(default=1.0, ge=0)
    bm25_relations: float = Field(default=1.0, ge=0)
    graph_expansion: float = Field(default=1.0, ge=0)
    # off by default: on LoCoMo it did not beat the recipe without it (docs/benchmarks.md);
    # the `hybrid_linked` preset weighs it like the others
    entity_linked_facts: float = Field(default=0.0, ge=0)
    # facts of the same add as one of the best facts: a share (this weight) of its fused score
    # (retrieve/episodes.py); chosen on one LoCoMo conversation, held out on the other
    # (docs/benchmarks.md)
    episode_context: float = Field(default=0.3, ge=0)


class FusionConfig(_Section):
    """How a search's rankings are fused: a recipe given as data, not as code branches.
    `retrieval.fusion` also takes a preset's name (retrieve/fusion.py PRESETS)."""

    # relative: scores scaled per ranking, weighted, summed (retrieve/fusion.py); on LoCoMo it
    # beat RRF on the conversation chosen on and on the held-out one, on both stores
    # (docs/benchmarks.md); "rrf" (preset `hybrid_rrf`) is the rank-only fusion of before
    method: Literal["rrf", "weighted", "relative"] = "relative"
    relation_method: Literal["rrf", "weighted", "relative"] | None = Field(
        default=None,
        description="how the relation half fuses; None: as `method`, except `relative`, which "
        "was measured on facts only (LoCoMo's observations make no edges): then rrf",
    )
    rrf_k: int = Field(default=60, ge=1)
    weights: FusionWeights = Field(default_factory=FusionWeights)
    context_seeds: int = Field(
        default=5,
        ge=1,
        description="how many of the best facts lend their episode's other facts a share of "
        "their score (the `episode_context` ranking)",
    )
    common_words: float = Field(
        default=0.5,
        gt=0.0,
        le=1.0,
        description="a query word held by more than this share of the scope's facts is left "
        "out of the facts' BM25 query: within the scope it tells no fact apart (past one half "
        "its Robertson-Sparck Jones weight is <= 0), but BM25's store-wide statistics, over "
        "every tenant, weigh a user's own name as a rare word; only beside a rarer query word "
        "(when every word is common all are kept); 1.0 keeps every word",
    )
    hub_penalty: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="the dense fact ranking's hubness correction: each candidate's cosine "
        "minus this times its cosine with the scope's centroid (the mean of its facts' unit "
        'vectors, kept by the writes). Facts near the centroid ("X values her family") are '
        "near every query and crowd out the specific ones; 0 turns it off. Chosen on one "
        "LoCoMo conversation, held out on the other (docs/benchmarks.md)",
    )
    near_duplicate: float = Field(
        default=1.0,
        ge=-1.0,
        le=1.0,
        description="a fact whose embedding cosine with a higher-ranked returned fact is at "
        "least this (and that names the same numbers) is left out; 1.0 keeps near-duplicates "
        "(the default: on LoCoMo a cut at 0.95 dropped repeated facts whose evidence differs, "
        "docs/benchmarks.md); e.g. 0.95 for a top ten of distinct facts",
    )
    mmr_lambda: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="maximal marginal relevance over the facts instead of the near-duplicate "
        "cut: lambda x relevance - (1 - lambda) x similarity to those already chosen",
    )

    def for_relations(self) -> FusionConfig:
        """This recipe with the relation half's method."""
        method = self.relation_method
        if method is None:
            method = "rrf" if self.method == "relative" else self.method
        return self if method == self.method else self.model_copy(update={"method": method})

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        """entity_weight / triple_weight (before named rankings) still work."""
        if isinstance(data, dict) and ("entity_weight" in data or "triple_weight" in data):
            data = dict(data)
            weights = dict(data.get("weights") or {})
            if "entity_weight" in data:
                weights["graph_expansion"] = data.pop("entity_weight")
            if "triple_weight" in data:
                weights["dense_relations"] = data.pop("triple_weight")
            data["weights"] = weights
        return data


class RetrievalConfig(_Section):
    hops: int = Field(default=1, ge=0, le=3)
    siblings: bool = Field(
        default=True, description="also walk edges sharing a relation and hub with a seed's edge"
    )
    sibling_limit: int = Field(
        default=200,
        ge=0,
        description="sibling edges read at most (a store without `siblings`: edges read "
        "around hub nodes)",
    )
    sibling_hubs: int = Field(
        default=8,
        ge=0,
        description="hubs whose siblings are read: those of the best-scoring hop-1 edges (a "
        "seed such as a city has hundreds of edges, each naming a hub)",
    )
    link_threshold: float = Field(
        default=0.55, description="query/entity-name cosine needed to link by embedding"
    )
    link_top_k: int = 5
    link_lexical: bool = Field(
        default=False,
        description="also link the query to entities by BM25 over their names and aliases "
        "(a name's word, e.g. a first name for a full name), beside the exact n-gram match",
    )
    triple_top_k: int = 50
    expansion_limit: int = 500
    fact_top_k: int = Field(default=50, ge=1, description="candidates per fact ranking")
    fusion: FusionConfig = Field(default_factory=FusionConfig)
    concurrent_reads: bool | None = Field(
        default=None,
        description="run a search's independent store reads (entity linking, triple search, "
        "fact search) at once; None = when the store's reads are round trips to a server "
        "(Neo4j), not for the in-process embedded store, where threads only add overhead",
    )
    walk_statement: bool | None = Field(
        default=None,
        description="after linking, read the walk, siblings, BM25 and the likely hits' records "
        "in one store call (`GraphStore.walk`); None = when the store answers it in one round "
        "trip (Neo4j), False = the separate reads (the same results, more round trips)",
    )

    @field_validator("fusion", mode="before")
    @classmethod
    def _preset(cls, value: Any) -> Any:
        """A preset's name stands for its recipe."""
        if isinstance(value, str):
            from mem0g.retrieve.fusion import PRESETS

            if value not in PRESETS:
                raise ValueError(f"unknown fusion preset {value!r}; choose from {sorted(PRESETS)}")
            return PRESETS[value].model_copy(deep=True)
        return value


class MemorySection(_Section):
    """Which paths an `add` runs, and the extraction context both paths get."""

    graph: bool = True
    facts: bool = True
    recent_messages: int = Field(default=10, ge=0, description="m: recent messages as context")
    summary: bool = True
    summary_every: int = Field(default=10, ge=1, description="k: refresh after k new messages")
    replans: int = Field(
        default=8,
        ge=0,
        description="how often an add is planned again when another writer changed its tenant "
        "meanwhile (LLM answers to unchanged requests are reused)",
    )


class FactsConfig(_Section):
    max_existing: int = Field(default=10, ge=1, description="s: similar facts per new fact")
    min_similarity: float = Field(
        default=0.3, ge=-1.0, le=1.0, description="below this an existing fact is not related"
    )


class LimitsConfig(_Section):
    """Size limits, checked before the first LLM call (what the caller sends) and on every
    LLM answer (what the model returns; a violation is re-asked like any invalid answer), so
    both stores see the same bounded values. Names, keys and tenant ids are indexed on Neo4j,
    whose index keys stop near 8 KB: hence the upper bounds (4 bytes per character at most)."""

    max_id_chars: int = Field(default=256, ge=1, le=256, description="user/agent/run id")
    max_message_chars: int = Field(default=32_000, ge=1, description="one message's content")
    max_name_chars: int = Field(default=256, ge=1, le=512, description="an entity's name")
    max_relation_chars: int = Field(
        default=128, ge=1, le=256, description="a relation's or an entity type's name"
    )
    max_fact_chars: int = Field(default=2_000, ge=1, description="one fact's text")
    max_query_chars: int = Field(default=4_000, ge=1, description="one search query")
    max_names: int = Field(default=200, ge=1, description="entities in one LLM answer")
    max_relations: int = Field(default=500, ge=1, description="relations in one LLM answer")


class MemoryConfig(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MEM0G_", env_nested_delimiter="__", extra="forbid", case_sensitive=False
    )

    llm: LLMConfig = Field(default_factory=LLMConfig)
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    graph_store: GraphStoreConfig = Field(default_factory=GraphStoreConfig)
    resolver: ResolverConfig = Field(default_factory=ResolverConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    memory: MemorySection = Field(default_factory=MemorySection)
    facts: FactsConfig = Field(default_factory=FactsConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)

    @classmethod
    def load(cls, config: dict[str, Any] | MemoryConfig | None = None) -> MemoryConfig:
        if isinstance(config, MemoryConfig):
            return config
        return cls(**(config or {}))
