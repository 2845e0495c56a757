"""`mem0g demo`: a bundled five-session conversation, ingested, queried and summarised.

It shows what the library does over a year of chat, on both memories at once: the graph (ADD,
UPDATE, INVALIDATE, NOOP, aliases, history, `as_of` queries) and the facts (ADD, UPDATE, DELETE,
NOOP, per-fact history), then the context block an answer prompt gets and the conversation
summary. It runs the real pipeline: the real `openai` client, the real MiniLM embedder and the
embedded store. Without an LLM it talks to the scripted TEST DOUBLE server, whose answers
(script.json) are the answer key a good model gives for sample.json, and it says so loudly.
Every number printed is measured during the run.

What lives here: this module (the mode, the setup and the order of the walk-through:
`run`, `run_demo`), `sample.py` (the sample, its tenant and the questions asked), `views.py`
(rich renderings of records), `sections.py` (the printed sections, filling `DemoReport`), and
the data files sample.json and script.json. Who may import it: the CLI (`mem0g demo`), tests
and scripts; it is a client of `Memory` and of `mem0g.testing`'s scripted server.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from mem0g.config import (
    EmbedderConfig,
    FactsConfig,
    GraphStoreConfig,
    LLMConfig,
    MemoryConfig,
    MemorySection,
    ResolverConfig,
    RetrievalConfig,
)
from mem0g.demo.sample import (
    CONTEXT_LIMIT,
    CONTEXT_QUERY,
    QUERIES,
    SAMPLE_PATH,
    SCRIPT_PATH,
    USER_ID,
    load_sessions,
)
from mem0g.demo.sections import (
    DemoReport,
    _ingest,
    _show_context_and_summary,
    _show_results,
    _summary,
)
from mem0g.demo.views import _seconds, _status
from mem0g.embed import make_embedder
from mem0g.llm.client import LLMClient, LLMError
from mem0g.memory import Memory

__all__ = [
    "BANNER",
    "CONTEXT_LIMIT",
    "CONTEXT_QUERY",
    "QUERIES",
    "SAMPLE_PATH",
    "SCRIPT_PATH",
    "USER_ID",
    "DemoReport",
    "load_sessions",
    "run",
    "run_demo",
]

BANNER = (
    "No LLM configured: this demo uses scripted answers for the bundled sample (a test double "
    "standing in for the LLM API), not a live model. Set OPENAI_API_KEY or MEM0G_LLM__BASE_URL "
    "to run it live."
)
# When an LLM is configured but --scripted was asked for, "No LLM configured" would be false.
BANNER_CHOSEN = (
    "Scripted mode: this demo uses scripted answers for the bundled sample (a test double "
    "standing in for the LLM API), not a live model. Run `mem0g demo --live` to use the "
    "configured LLM."
)
NOT_CONFIGURED = (
    "the live demo needs an LLM, and none is configured: set OPENAI_API_KEY (OpenAI), or "
    "MEM0G_LLM__BASE_URL for a local OpenAI-compatible server (Ollama, vLLM, LM Studio); "
    "or run `mem0g demo --scripted` for the scripted walk-through"
)


# ---------------------------------------------------------------- the demo


def _choose_mode(live: bool | None) -> tuple[bool, MemoryConfig | None, bool]:
    """(live, env config, whether an LLM is configured); raises when --live has no LLM."""
    env_config = MemoryConfig()
    configured = env_config.llm.is_configured()
    if live is None:
        live = configured
    if live and not configured:
        raise LLMError(NOT_CONFIGURED)
    return live, env_config, configured


def _check_empty(memory: Memory, path: Path) -> None:
    """A second run on the same store would find every fact already known (and, scripted, no
    answers for the payloads that causes), so refuse instead of mixing the two."""
    stats = memory.stats(user_id=USER_ID)
    if stats.episodes or stats.entities:
        raise ValueError(
            f"{path} already holds a demo memory for user {USER_ID!r}; give an empty directory, "
            f"or clear it with `mem0g --path {path} delete --user {USER_ID}`"
        )


def run(console: Console, live: bool | None = None, path: str | Path | None = None) -> int:
    """`mem0g demo`: run it on `console` (see `run_demo`); returns the exit code, 0."""
    run_demo(console, live, path)
    return 0


def run_demo(
    console: Console, live: bool | None = None, path: str | Path | None = None
) -> DemoReport:
    """Run the demo on `console` and return what it measured. `live`: True = the configured
    LLM (error if none), False = the scripted test double, None = live when configured.
    `path`: keep the store there (default: a temporary directory, removed at the end)."""
    started = time.perf_counter()
    live, env_config, configured = _choose_mode(live)
    scripted = not live
    kept = path is not None
    store_path = (
        Path(path).expanduser()
        if path is not None
        else Path(tempfile.mkdtemp(prefix="mem0g-demo-"))
    )
    report = DemoReport(path=store_path, kept=kept, scripted=scripted)
    sessions = load_sessions()

    console.print()
    console.print(
        Rule(Text("mem0g demo: a year of chat, remembered as a graph and as facts", style="bold"))
    )
    if scripted:
        console.print(
            Panel(
                Text(BANNER if not configured else BANNER_CHOSEN, style="bold"),
                title="SCRIPTED MODE (no live model)",
                border_style="yellow",
                padding=(1, 2),
            )
        )

    server_cm: Any = nullcontext(None)
    if scripted:
        from mem0g.testing.server import ScriptedLLMServer

        server_cm = ScriptedLLMServer.from_file(SCRIPT_PATH)
    try:
        with server_cm as server:
            if server is not None:
                llm_config = LLMConfig(base_url=server.base_url, api_key="scripted")
                resolver, retrieval = ResolverConfig(), RetrievalConfig()
                # No background summary while adding: when it lands would change the payloads
                # from run to run. The demo refreshes it once, at the end.
                memory_section, facts = MemorySection(summary=False), FactsConfig()
                llm_line = f"scripted test double at {server.base_url} (script: {SCRIPT_PATH.name})"
            else:
                assert env_config is not None
                llm_config = env_config.llm
                resolver, retrieval = env_config.resolver, env_config.retrieval
                memory_section, facts = env_config.memory, env_config.facts
                endpoint = llm_config.resolved_base_url() or "the OpenAI API"
                llm_line = f"{llm_config.model} via {endpoint} ({llm_config.provider}, live)"
            config = MemoryConfig(
                llm=llm_config,
                embedder=EmbedderConfig(),
                graph_store=GraphStoreConfig(provider="embedded", path=str(store_path)),
                resolver=resolver,
                retrieval=retrieval,
                memory=memory_section,
                facts=facts,
            )
            t0 = time.perf_counter()
            with _status(console, "Loading the embedding model (all-MiniLM-L6-v2, offline)..."):
                embedder = make_embedder(config.embedder)
            load_seconds = time.perf_counter() - t0

            setup = Table.grid(padding=(0, 2))
            setup.add_column(style="bold")
            setup.add_column()
            setup.add_row("LLM", llm_line)
            setup.add_row(
                "Embedder",
                f"{embedder.name}, {embedder.dims} dims, local "
                f"(loaded in {_seconds(load_seconds)})",
            )
            summary_line = (
                f"refreshed in the background every {config.memory.summary_every} messages"
                if config.memory.summary
                else "refreshed once at the end (not in the background, so that scripted runs "
                "are all alike)"
            )
            paths = [
                name
                for name, on in (
                    ("graph (Mem0g)", config.memory.graph),
                    ("facts (Mem0)", config.memory.facts),
                )
                if on
            ]
            setup.add_row(
                "Memory",
                f"{' and '.join(paths) or 'no path'} on every add, side by side; "
                f"summary {summary_line}",
            )
            setup.add_row("Store", f"embedded, {store_path}" + ("" if kept else " (temporary)"))
            setup.add_row(
                "Conversation",
                f"{SAMPLE_PATH.name}: {len(sessions)} sessions, "
                f"{sessions[0]['timestamp'][:10]} to {sessions[-1]['timestamp'][:10]},"
                f" stored for user_id={USER_ID!r}",
            )
            console.print(setup)

            with Memory(config, llm=LLMClient(config.llm), embedder=embedder) as memory:
                _check_empty(memory, store_path)
                ingest_seconds = _ingest(console, memory, sessions, report)
                search_seconds = _show_results(console, memory, report, sessions)
                summary_seconds = _show_context_and_summary(console, memory, report)
                stats = memory.stats(user_id=USER_ID)
            if server is not None:
                report.server_requests = len(server.requests)
                report.unmatched_requests = len(server.unmatched)
    finally:
        if not kept:
            shutil.rmtree(store_path, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    _summary(console, report, stats, load_seconds, ingest_seconds, search_seconds, summary_seconds)
    return report
