"""The add benchmark: `Memory.add` against the scripted TEST DOUBLE LLM server, with the LLM
and model waits subtracted to give mem0g's own overhead per add."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.data import BASE_TIME, TARGET_USER, SyntheticGraph, person_name
from bench.timing import Clock, Progress, Spans, TimedEmbedder, inline_submit, profiled, summary
from mem0g import Memory
from mem0g.config import MemoryConfig
from mem0g.embed import CachedEmbedder, Embedder
from mem0g.llm.client import LLMClient
from mem0g.llm.protocol import RESOLVE_UPDATES, ResolveUpdatesPayload
from mem0g.stores.base import GraphStore
from mem0g.types import triple_text as make_triple_text


@dataclass
class ScriptedTurn:
    text: str
    entities: list[tuple[str, str]]
    relations: list[tuple[str, str, str]]


def make_turns(graph: SyntheticGraph, count: int, rng: random.Random) -> list[ScriptedTurn]:
    """Distinct messages: 70% new facts about existing people (existing edges touch them, so
    `resolve_updates` is asked), 20% a new person at existing places, 10% all-new entities."""
    turns: list[ScriptedTurn] = []
    fresh = len(graph.people) + 100_000
    for i in range(count):
        city, company, hobby = (
            rng.choice(graph.cities),
            rng.choice(graph.companies),
            rng.choice(graph.hobbies),
        )
        if i % 10 == 0:
            a, b = person_name(fresh + 2 * i), person_name(fresh + 2 * i + 1)
            place = f"Town_{i}"
            turns.append(
                ScriptedTurn(
                    f"{a} and {b} have been friends since they met in {place} (note {i}).",
                    [(a, "person"), (b, "person"), (place, "city")],
                    [(a, "friend_of", b), (a, "lives_in", place)],
                )
            )
        elif i % 10 in (1, 2):
            new = person_name(fresh + 2 * i)
            turns.append(
                ScriptedTurn(
                    f"My new colleague {new} just joined {company} and is really into {hobby} "
                    f"(note {i}).",
                    [(new, "person"), (company, "organization"), (hobby, "activity")],
                    [(new, "works_at", company), (new, "enjoys", hobby)],
                )
            )
        else:
            person = rng.choice(graph.people)
            turns.append(
                ScriptedTurn(
                    f"{person} started a new job at {company} and moved to {city} (note {i}).",
                    [(person, "person"), (company, "organization"), (city, "city")],
                    [(person, "works_at", company), (person, "lives_in", city)],
                )
            )
    return turns


def scripted_rules(turns: Sequence[ScriptedTurn]) -> list[dict[str, Any]]:
    """Callable rules: the TEST DOUBLE answers each task instantly from the turn's script."""
    by_text = {t.text: t for t in turns}

    def turn_of(payload: dict[str, Any]) -> ScriptedTurn | None:
        messages = payload.get("messages") or [{}]
        return by_text.get(messages[-1].get("content", ""))

    def entities(payload: dict[str, Any]) -> dict[str, Any]:
        turn = turn_of(payload)
        found = turn.entities if turn else []
        return {"entities": [{"name": n, "type": t} for n, t in found]}

    def relations(payload: dict[str, Any]) -> dict[str, Any]:
        turn = turn_of(payload)
        found = turn.relations if turn else []
        return {
            "relations": [
                {"source": s, "relation": r, "destination": d, "valid_from": None}
                for s, r, d in found
            ]
        }

    def facts(payload: dict[str, Any]) -> dict[str, Any]:
        turn = turn_of(payload)
        found = turn.relations if turn else []
        return {"facts": [make_triple_text(s, r, d) for s, r, d in found]}

    summary_text = "The user talks about colleagues, their jobs, homes and hobbies."
    return [
        {"task": "extract_entities", "response": entities},
        {"task": "establish_relations", "response": relations},
        {"task": "resolve_updates", "response": {"operations": []}},
        {"task": "extract_facts", "response": facts},
        {"task": "update_memory", "response": {"operations": []}},
        {"task": "summarize", "response": {"summary": summary_text}},
    ]


def bench_add(
    store: GraphStore,
    inner: Embedder,
    graph: SyntheticGraph,
    adds: int,
    warmup: int,
    rng: random.Random,
    progress: Progress,
    memory_section: dict[str, Any],
    profile_path: Path | None = None,
) -> dict[str, Any]:
    """Per-add wall time minus the time the add was waiting on an LLM round trip
    (`LLMClient._complete`: SDK + HTTP + the scripted server) or the embedding model =
    mem0g's own overhead on the critical path. Background `summarize` calls are not
    subtracted (the add never waits for them)."""
    from mem0g.testing import ScriptedLLMServer

    extra = 20 if profile_path is not None else 0
    turns = make_turns(graph, adds + warmup + extra, rng)
    timed_turns, extra_turns = turns[: adds + warmup], turns[adds + warmup :]
    spans = Spans()
    path_cpu = [0.0]
    path_lock = threading.Lock()
    with ScriptedLLMServer(scripted_rules(turns)) as server:
        config = MemoryConfig.load(
            {
                "llm": {"base_url": server.base_url, "api_key": "bench", "max_retries": 0},
                "memory": memory_section,
            }
        )
        llm = LLMClient(config.llm)
        in_background = lambda task, *_a, **_k: task == "summarize"  # noqa: E731
        llm._complete = spans.wrap("llm", llm._complete, in_background)  # type: ignore[method-assign]
        embedder = CachedEmbedder(TimedEmbedder(inner, Clock()))
        embedder.inner.embed = spans.wrap("model", embedder.inner.embed)
        memory = Memory(config, llm=llm, embedder=embedder, store=store)
        pool = getattr(memory, "_paths", None)  # the graph/fact path threads, if any
        if pool is not None:
            submit = pool.submit

            def counted_submit(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
                def run(*a: Any, **k: Any) -> Any:
                    start_cpu = time.thread_time()
                    try:
                        return fn(*a, **k)
                    finally:
                        with path_lock:
                            path_cpu[0] += time.thread_time() - start_cpu

                return submit(run, *args, **kwargs)

            pool.submit = counted_submit

        empty = ResolveUpdatesPayload(reference_time=BASE_TIME.isoformat(), new=[], existing=[])
        rtt_empty: list[float] = []
        for i in range(30 + 5):
            start = time.perf_counter()
            llm.call(RESOLVE_UPDATES, empty)
            if i >= 5:
                rtt_empty.append(time.perf_counter() - start)

        wall, overhead, overhead_cpu, in_llm, in_model, in_either = [], [], [], [], [], []
        n_calls: list[int] = []
        by_task: dict[str, int] = {}
        events: dict[str, int] = {}
        with progress.task("add", len(timed_turns)) as advance:
            for i, turn in enumerate(timed_turns):
                spans.reset()
                path_cpu[0] = 0.0
                when = BASE_TIME + timedelta(days=4000, minutes=i)
                start, start_cpu = time.perf_counter(), time.thread_time()
                result = memory.add(turn.text, user_id=TARGET_USER, timestamp=when)
                end = time.perf_counter()
                took_cpu = time.thread_time() - start_cpu + path_cpu[0]
                advance(1)
                if i < warmup:
                    continue
                waiting = spans.union(start, end, ("llm", "model"))
                wall.append(end - start)
                in_llm.append(spans.union(start, end, ("llm",)))
                in_model.append(spans.union(start, end, ("model",)))
                in_either.append(waiting)
                overhead.append(end - start - waiting)
                overhead_cpu.append(took_cpu - spans.cpu)
                n_calls.append(result.usage.calls)
                for task, count in result.usage.by_task.items():
                    by_task[task] = by_task.get(task, 0) + count
                for change in result.relations:
                    events[change.event.value] = events.get(change.event.value, 0) + 1
        profile = None
        if profile_path is not None:

            def work() -> None:
                for i, turn in enumerate(extra_turns):
                    when = BASE_TIME + timedelta(days=4100, minutes=i)
                    memory.add(turn.text, user_id=TARGET_USER, timestamp=when)

            if pool is not None:  # cProfile sees one thread: run the paths inline meanwhile
                pool.submit = inline_submit
            profile = {
                "file": str(profile_path),
                "top_tottime": profiled(work, extra, profile_path),
            }
        if pool is not None:
            pool.shutdown(wait=True)
        summaries_worker = getattr(memory, "summaries", None)
        if summaries_worker is not None:
            summaries_worker.close()  # let a refresh in flight finish before the store closes
        unmatched = len(server.unmatched)
        summaries = server.calls("summarize")
    return {
        "edges_before": len(graph.triples),
        "memory_paths": memory_section,
        "raw": summary(wall),
        "throughput_adds_per_s": round(len(wall) / sum(wall), 2),
        "overhead": summary(overhead),
        "overhead_cpu": summary(overhead_cpu),
        "llm_roundtrip": summary(in_llm),
        "embedding_model": summary(in_model),
        "llm_or_model": summary(in_either),
        "empty_call_roundtrip": summary(rtt_empty),
        "llm_calls_per_add": {
            "mean": round(float(np.mean(n_calls)), 3),
            "min": int(min(n_calls)),
            "max": int(max(n_calls)),
            "by_task": {t: round(c / len(n_calls), 3) for t, c in sorted(by_task.items())},
        },
        "background_summarize_calls": summaries,
        "events": events,
        "unmatched_llm_requests": unmatched,
        **({"profile": profile} if profile else {}),
    }
