"""The harness: ingest each unit into its own tenant, then, once every unit is stored, answer
(full mode) or retrieve (retrieval mode) the questions, writing every step to the run directory
as it goes. (Every question sees the same store: BM25's word statistics are the whole
store's, so a question asked while another unit was still being added could rank otherwise.)

Run directory:
    config.json      what was asked (a resumed run must ask the same)
    planned.json     the ids of the questions and units this invocation's selection holds:
                     the report covers exactly these (a resume with narrower --categories or
                     limits keeps the wider run's records, out of its figures) and counts what
                     is missing from them, when a run stopped
    ingest.jsonl     one line per `add` done: unit, step, timing, usage, fact ids -> refs
    questions.jsonl  one line per question done
    runs.jsonl       one line per invocation: network calls made, cache hits
    llm-cache.sqlite the response cache (unless --cache names a shared one)
    store/           the embedded store (Neo4j keeps its data on the server)
    results.json, report.md, plots/*.png   rendered by mem0g.eval.report

A unit whose steps are all in ingest.jsonl is not ingested again; a question in
questions.jsonl is not asked again. An `add` is atomic and its line is written right after
it, so an interruption between the two (a kill at that instant) repeats at most one step.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from mem0g.config import MemoryConfig
from mem0g.eval.answering import FullMode
from mem0g.eval.data import (
    Dataset,
    EvalInputError,
    Session,
    Unit,
    load,
    parse_categories,
    select,
)
from mem0g.eval.llm import (
    CachingOpenAI,
    CallCounter,
    ChatLLM,
    ResponseCache,
    check_reachable,
    openai_client,
)
from mem0g.eval.progress import _progress
from mem0g.eval.retrieval import KS, RetrievalMode, _Baselines
from mem0g.eval.rundir import _Appender, _jsonl
from mem0g.llm.client import LLMClient, LLMError
from mem0g.types import AddResult, Usage

_R = TypeVar("_R")

MODES = ("full", "retrieval")
FACTS = ("turns", "observation")
STORES = ("embedded", "neo4j")
# a resumed run must agree on these; limits, categories and workers may change (not the
# judge runs: the report's J is the mean over runs of each run's score, so a question judged
# fewer times would drop out of the later runs' scores)
_MUST_MATCH = (
    "benchmark",
    "mode",
    "judge_runs",
    "facts",
    "store",
    "dataset_sha256",
    "limit_sessions",
    "limit_turns",
    "answer_model",
    "judge_model",
    "memory_model",
    "embedder",
    "context_limit",
    "context_tokens",
)


@dataclass
class EvalOptions:
    benchmark: str
    data: Path
    run_dir: Path
    mode: str = "full"
    facts: str = "turns"
    store: str = "embedded"
    workers: int = 2
    limit_conversations: int | None = None
    limit_questions: int | None = None
    limit_sessions: int | None = None
    limit_turns: int | None = None  # first N turns of each session (quick slices)
    categories: list[str] | None = None
    judge_runs: int = 3
    answer_model: str | None = None  # default: the memory's LLM model
    answer_base_url: str | None = None  # default: the memory's LLM endpoint
    judge_model: str | None = None  # default: the answer model
    judge_base_url: str | None = None  # default: the answer endpoint
    answer_max_tokens: int | None = 200
    memory_config: dict[str, Any] = field(default_factory=dict)
    cache: Path | None = None
    context_limit: int = 10
    context_tokens: int = 1000
    rescore: bool = False
    progress: bool = True


class _Stop(Exception):
    """Another worker failed: stop at the next step (what is done stays recorded)."""


def _pairs(unit: Unit) -> list[tuple[Session, list[Any]]]:
    """Full mode: turns added as message pairs within each session, in order (each with its
    session: a haystack may repeat a session id with another date)."""
    steps = []
    for session in unit.sessions:
        turns = session.turns
        for i in range(0, len(turns), 2):
            steps.append((session, turns[i : i + 2]))
    return steps


def _tenant_id(prefix: str, unit: Unit) -> str:
    return f"{prefix}{unit.id}"


def _speaker_messages(turns: list[Any]) -> list[dict[str, Any]]:
    return [{"role": t.role, "name": t.speaker, "content": t.text} for t in turns]


_BREAKS = (r"\n\s*\n", r"\n", r"[.!?]\s", r"[;:,]\s", r"\s")  # best first


def pieces(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut at the last paragraph, line,
    sentence or clause end in the limit's second half, else the last word end (a hard cut
    only inside one word longer than the limit); blank pieces are dropped. Why: a turn
    longer than a fact may be (LongMemEval's assistant turns often pass 2,000 characters)
    failed the whole retrieval run."""
    out: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        head = rest[: limit + 1]
        cut = 0
        for pattern in _BREAKS:  # a good end in the second half, else any word end
            ends = [m.end() for m in re.finditer(pattern, head) if m.end() <= limit]
            if ends and (ends[-1] > limit // 2 or pattern == _BREAKS[-1]):
                cut = ends[-1]
                break
        cut = cut or limit
        piece, rest = rest[:cut].strip(), rest[cut:].strip()
        if piece:
            out.append(piece)
    if rest:
        out.append(rest)
    return out


def _split_long(
    messages: list[dict[str, Any]], refs: list[list[str]], limit: int
) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Each message over `limit` characters as several of the same speaker, each piece with
    the turn's refs (its dia_id: any piece found finds the turn)."""
    out_messages: list[dict[str, Any]] = []
    out_refs: list[list[str]] = []
    for message, ref in zip(messages, refs, strict=True):
        parts = pieces(message["content"], limit) if len(message["content"]) > limit else [
            message["content"]]  # fmt: skip
        for part in parts:
            out_messages.append({**message, "content": part})
            out_refs.append(ref)
    return out_messages, out_refs


class Harness(RetrievalMode, FullMode):
    def __init__(self, options: EvalOptions) -> None:
        self.o = options
        self.stop = threading.Event()
        self.counter = CallCounter()
        self.dataset: Dataset
        self.units: list[Unit]
        self.cache: ResponseCache | None = None
        self.answer_llm: ChatLLM | None = None
        self.judge_llm: ChatLLM | None = None
        self.memory_llm: LLMClient | None = None

    # ------------------------------------------------------------------ checks, before work

    def prepare(self) -> None:
        o = self.o
        if o.mode not in MODES:
            raise EvalInputError(f"unknown mode {o.mode!r}; use one of {', '.join(MODES)}")
        if o.facts not in FACTS:
            raise EvalInputError(f"unknown --facts {o.facts!r}; use one of {', '.join(FACTS)}")
        if o.store not in STORES:
            raise EvalInputError(f"unknown --store {o.store!r}; use one of {', '.join(STORES)}")
        if o.facts == "observation" and (o.benchmark != "locomo" or o.mode != "retrieval"):
            raise EvalInputError("--facts observation is for LoCoMo in retrieval mode")
        if o.workers < 1 or o.judge_runs < 1:
            raise EvalInputError("--workers and --judge-runs must be at least 1")
        for name in ("limit_conversations", "limit_questions", "limit_sessions", "limit_turns"):
            value = getattr(o, name)
            if value is not None and value < 1:
                raise EvalInputError(f"--{name.replace('_', '-')} must be at least 1")
        o.categories = parse_categories(o.benchmark, o.categories)
        self.dataset = load(o.benchmark, o.data)
        self.units = select(
            self.dataset,
            categories=o.categories,
            limit_conversations=o.limit_conversations,
            limit_questions=o.limit_questions,
            limit_sessions=o.limit_sessions,
            limit_turns=o.limit_turns,
        )
        if not any(u.questions for u in self.units):
            raise EvalInputError("no question left after --categories and the limits")
        try:
            self.config = MemoryConfig.load(dict(o.memory_config))
        except ValueError as err:
            raise EvalInputError(f"invalid mem0g config: {err}") from None
        self._check_run_dir()
        if o.mode == "full":
            self._open_llms()

    def _run_config(self) -> dict[str, Any]:
        o, llm = self.o, self.config.llm
        answer_model = o.answer_model or llm.model
        emb = self.config.embedder
        return {
            "benchmark": o.benchmark,
            "mode": o.mode,
            "facts": o.facts if o.mode == "retrieval" else "extracted",
            "store": o.store,
            "dataset": str(o.data),
            "dataset_sha256": self.dataset.sha256,
            "dataset_notes": self.dataset.notes,
            "long_messages": self.long_messages(),
            "limit_conversations": o.limit_conversations,
            "limit_questions": o.limit_questions,
            "limit_sessions": o.limit_sessions,
            "limit_turns": o.limit_turns,
            "categories": o.categories,
            "judge_runs": o.judge_runs if o.mode == "full" else None,
            "memory_model": llm.model if o.mode == "full" else None,
            "memory_mode": llm.mode if o.mode == "full" else None,
            "answer_model": answer_model if o.mode == "full" else None,
            "judge_model": (o.judge_model or answer_model) if o.mode == "full" else None,
            "embedder": f"{emb.provider}:{emb.model or 'default'}",
            "context_limit": o.context_limit,
            "context_tokens": o.context_tokens,
            "ks": list(KS),
        }

    def _check_run_dir(self) -> None:
        o = self.o
        path = o.run_dir / "config.json"
        wanted = self._run_config()
        if path.exists():
            try:
                old = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as err:
                raise EvalInputError(f"{path}: not valid JSON ({err})") from None
            diffs = [
                f"{key}: {old.get(key)!r} there, {wanted.get(key)!r} now"
                for key in _MUST_MATCH
                if old.get(key) != wanted.get(key)
            ]
            if diffs:
                raise EvalInputError(
                    f"{o.run_dir} holds a different run ({'; '.join(diffs)}); "
                    "use a new --run-dir to start another"
                )
            self.run_id = old["run_id"]
            self.created = old.get("created")
        else:
            if o.run_dir.exists() and any(o.run_dir.iterdir()):
                raise EvalInputError(f"{o.run_dir} is not empty and holds no eval run")
            self.run_id = uuid.uuid4().hex[:8]
            self.created = datetime.now(timezone.utc).isoformat()
        self.run_config = {**wanted, "run_id": self.run_id, "created": self.created}

    def _open_llms(self) -> None:
        o, llm = self.o, self.config.llm
        cache_path = Path(o.cache) if o.cache else o.run_dir / "llm-cache.sqlite"
        memory_inner = _memory_client(self.config)
        answer_url = o.answer_base_url or llm.resolved_base_url()
        answer_inner = (
            memory_inner
            if o.answer_base_url is None
            else openai_client(answer_url, llm.resolved_api_key(), llm.timeout)
        )
        judge_inner = (
            answer_inner
            if o.judge_base_url is None
            else openai_client(o.judge_base_url, llm.resolved_api_key(), llm.timeout)
        )
        checked: set[str] = set()
        for what, client in (
            ("memory", memory_inner),
            ("answer", answer_inner),
            ("judge", judge_inner),
        ):
            if str(client.base_url) not in checked:
                check_reachable(client, what)
                checked.add(str(client.base_url))
        o.run_dir.mkdir(parents=True, exist_ok=True)
        self.cache = ResponseCache(cache_path)
        self.memory_llm = LLMClient(
            llm, client=CachingOpenAI(memory_inner, self.cache, self.counter, "memory")
        )
        answer_model = o.answer_model or llm.model
        self.answer_llm = ChatLLM(
            answer_inner, answer_model, self.cache, self.counter, "answer", o.answer_max_tokens
        )
        self.judge_llm = ChatLLM(
            judge_inner, o.judge_model or answer_model, self.cache, self.counter, "judge", 200
        )

    # ------------------------------------------------------------------ run

    def memory(self) -> Any:
        from mem0g.memory import Memory

        data = self.config.model_dump()
        if self.o.store == "embedded":
            data["graph_store"] = {
                **data["graph_store"],
                "provider": "embedded",
                "path": str(self.o.run_dir / "store"),
            }
        else:
            data["graph_store"] = {**data["graph_store"], "provider": "neo4j"}
        if self.o.mode == "retrieval":
            # verbatim storage: no extraction, and no background summary (which would call
            # the LLM): the retrieval path never reaches an LLM
            data["memory"] = {**data["memory"], "summary": False}
        config = MemoryConfig.load(data)
        return Memory(config, llm=self.memory_llm)

    def run(self) -> dict[str, Any]:
        o = self.o
        o.run_dir.mkdir(parents=True, exist_ok=True)
        (o.run_dir / "config.json").write_text(
            json.dumps(self.run_config, indent=2, ensure_ascii=False), encoding="utf-8"
        )
        planned = {
            "questions": [q.id for u in self.units for q in u.questions],
            "units": [u.id for u in self.units],
        }
        (o.run_dir / "planned.json").write_text(json.dumps(planned), encoding="utf-8")
        questions_path = o.run_dir / "questions.jsonl"
        if o.rescore and questions_path.exists():
            _back_up(questions_path)
        self.ingested: dict[tuple[str, int], dict[str, Any]] = {
            (r["unit"], r["step"]): r for r in _jsonl(o.run_dir / "ingest.jsonl")
        }
        self.answered = {r["id"] for r in _jsonl(questions_path)}
        self.ingest_out = _Appender(o.run_dir / "ingest.jsonl")
        self.questions_out = _Appender(questions_path)
        self.prefix = f"eval-{self.run_id}-"
        started = time.time()
        memory = self.memory()
        error: BaseException | None = None
        try:
            with _progress(o.progress) as bar:
                overall = bar.add(
                    "all units",
                    sum(self._adds_todo(u) + self._questions_todo(u) for u in self.units),
                )

                def shown(todo: int, unit: Unit, work: Callable[[Callable[[], None]], _R]) -> _R:
                    """`work` with a bar of the unit's own while it runs (one per unit at
                    work, not one per unit: LongMemEval has 500)."""
                    if not todo:
                        return work(lambda: None)
                    mine = bar.add(unit.id, todo)
                    try:
                        return work(functools.partial(bar.advance, mine, overall))
                    finally:
                        bar.remove(mine)

                with ThreadPoolExecutor(max_workers=o.workers, thread_name_prefix="eval") as pool:
                    # every unit is stored before any question is asked: BM25's word
                    # statistics are the whole store's, so a question asked while another
                    # unit was still being added would be ranked over another store than
                    # on a rerun or a resume (and its answer would miss the cache)
                    refs = self._phase(
                        pool,
                        lambda u: shown(
                            self._adds_todo(u), u, lambda tick: self._ingest_unit(memory, u, tick)
                        ),
                    )
                    self._phase(pool, lambda u: shown(
                        self._questions_todo(u), u,
                        lambda tick: self._ask_unit(memory, u, refs[u.id], tick)))  # fmt: skip
        except BaseException as exc:
            error = exc
        finally:
            memory.close()
            _Appender(o.run_dir / "runs.jsonl").write(
                {
                    "started": datetime.fromtimestamp(started, timezone.utc).isoformat(),
                    "seconds": round(time.time() - started, 2),
                    "network_calls": dict(self.counter.calls),
                    "cache_hits": self.cache.hits if self.cache else 0,
                    "llm_modes": dict(getattr(self.memory_llm, "modes", {}) or {}),
                    "llm_fallbacks": list(getattr(self.memory_llm, "fallbacks", []) or []),
                    "llm_invalid": dict(getattr(self.memory_llm, "invalid", {}) or {}),
                    "llm_failed": dict(getattr(self.memory_llm, "failed", {}) or {}),
                    "completed": error is None,
                    "error": None if error is None else f"{type(error).__name__}: {error}",
                }
            )
            if self.cache is not None:
                self.cache.close()
        if error is not None:
            raise error
        from mem0g.eval.report import render

        return render(o.run_dir)

    def _steps(self, unit: Unit) -> list[tuple[str, list[dict[str, Any]], list[list[str]], Any]]:
        """(session, messages, refs per message, timestamp) for each add of the unit; a
        message longer than `message_limit` is stored as several (`pieces`)."""
        limit = self.message_limit()
        return [(sid, *_split_long(messages, refs, limit), when)
                for sid, messages, refs, when in self._whole_steps(unit)]  # fmt: skip

    def message_limit(self) -> int:
        """The longest message an add takes: in retrieval mode each message is a fact."""
        limits = self.config.limits
        if self.o.mode == "retrieval":
            return min(limits.max_message_chars, limits.max_fact_chars)
        return limits.max_message_chars

    def long_messages(self) -> dict[str, int] | None:
        """How many messages the selected units hold over the limit, and their pieces."""
        limit, split, parts = self.message_limit(), 0, 0
        for unit in self.units:
            for _, messages, _, _ in self._whole_steps(unit):
                for m in messages:
                    if len(m["content"]) > limit:
                        split += 1
                        parts += len(pieces(m["content"], limit))
        return {"limit": limit, "messages": split, "pieces": parts} if split else None

    def _whole_steps(
        self, unit: Unit
    ) -> list[tuple[str, list[dict[str, Any]], list[list[str]], Any]]:
        o = self.o
        times = {s.id: s.time for s in unit.sessions}
        steps: list[tuple[str, list[dict[str, Any]], list[list[str]], Any]] = []
        if o.mode == "full":
            for session, turns in _pairs(unit):
                messages, refs = _speaker_messages(turns), [[t.ref] for t in turns]
                steps.append((session.id, messages, refs, session.time))
        elif o.facts == "turns":
            for s in unit.sessions:
                if s.turns:
                    steps.append(
                        (s.id, _speaker_messages(s.turns), [[t.ref] for t in s.turns], s.time)
                    )
        else:
            groups: dict[tuple[str, str], list[Any]] = {}
            for ob in unit.observations:
                groups.setdefault((ob.session, ob.speaker), []).append(ob)
            for (sid, speaker), obs in groups.items():
                if sid not in times:
                    continue
                messages = [{"role": "user", "name": speaker, "content": ob.text} for ob in obs]
                steps.append((sid, messages, [ob.refs for ob in obs], times[sid]))
        return steps

    def _adds_todo(self, unit: Unit) -> int:
        return sum(1 for i in range(len(self._steps(unit))) if (unit.id, i) not in self.ingested)

    def _questions_todo(self, unit: Unit) -> int:
        return sum(1 for q in unit.questions if q.id not in self.answered)

    def _phase(self, pool: ThreadPoolExecutor, work: Callable[[Unit], _R]) -> dict[str, _R]:
        """`work` for every unit on the pool; the first failure stops the others at their next
        step (what is done stays recorded) and is raised once all have stopped."""
        futures = {pool.submit(work, unit): unit.id for unit in self.units}
        error: BaseException | None = None
        try:
            for future in as_completed(futures):
                exc = future.exception()
                if exc is not None and not isinstance(exc, _Stop) and error is None:
                    error = exc
                    self.stop.set()
        except BaseException:  # Ctrl-C reaches this thread: the workers stop at their next
            self.stop.set()  # step, the units not begun are not begun (the pool's exit
            for future in futures:  # waited for every queued unit's whole work)
                future.cancel()
            raise
        if error is not None:
            raise error
        return {uid: future.result() for future, uid in futures.items()}

    def _ingest_unit(
        self, memory: Any, unit: Unit, advance: Callable[[], None]
    ) -> dict[str, list[str]]:
        """The unit's adds not done yet; the refs of every fact added, by fact id."""
        tenant = _tenant_id(self.prefix, unit)
        fact_refs: dict[str, list[str]] = {}
        for i, (session, messages, refs, when) in enumerate(self._steps(unit)):
            done = self.ingested.get((unit.id, i))
            if done is None:
                if self.stop.is_set():
                    raise _Stop()
                done = self._add(memory, unit, tenant, i, session, messages, refs, when)
                advance()
            for fid, r in done.get("facts", []):
                fact_refs[fid] = r
        return fact_refs

    def _ask_unit(
        self,
        memory: Any,
        unit: Unit,
        fact_refs: dict[str, list[str]],
        advance: Callable[[], None],
    ) -> None:
        """The unit's questions not answered yet (retrieval mode: retrieved), in order."""
        tenant = _tenant_id(self.prefix, unit)
        todo = [q for q in unit.questions if q.id not in self.answered]
        if not todo:
            return
        if self.o.mode == "retrieval":  # over exactly what mem0g stored
            stored = [(m["content"], r) for _, ms, refs, _ in self._steps(unit)
                      for m, r in zip(ms, refs, strict=True)]  # fmt: skip
            baselines = _Baselines(memory.embedder, unit, stored)
        for q in todo:
            if self.stop.is_set():
                raise _Stop()
            if self.o.mode == "retrieval":
                row = self._retrieve(memory, tenant, q, fact_refs, baselines)
            else:
                row = self._answer(memory, tenant, q)
            row.update({"id": q.id, "unit": unit.id, "category": q.category})
            self.questions_out.write(row)
            advance()
        self._stats(memory, unit, tenant)

    def _add(
        self,
        memory: Any,
        unit: Unit,
        tenant: str,
        step: int,
        session: str,
        messages: list[dict[str, Any]],
        refs: list[list[str]],
        when: Any,
    ) -> dict[str, Any]:
        infer = self.o.mode == "full"
        started = time.perf_counter()
        before = self.counter.total
        failed = None
        try:
            result = memory.add(messages, user_id=tenant, timestamp=when, infer=infer)
        except LLMError as err:
            if "no valid answer" not in str(err):
                raise  # the endpoint failed: stop (resume later)
            # the model never gave a valid answer: this add wrote nothing; count it, go on
            failed = str(err)
            result = AddResult(episode_id="", usage=Usage())  # its calls: network_calls
        if infer:
            memory.summaries.wait_idle()  # the next add sees the same summary on every rerun
        ms = (time.perf_counter() - started) * 1000
        facts = []
        if not infer:  # one fact per message, in order: map each back to its dia_ids
            facts = [[f.id, r] for f, r in zip(result.facts, refs, strict=True)]
        row = {
            "unit": unit.id,
            "step": step,
            "session": session,
            "ms": round(ms, 2),
            "usage": result.usage.model_dump(),
            "network_calls": self.counter.total - before,
            "relations": {
                e: sum(1 for c in result.relations if c.event == e)
                for e in ("ADD", "UPDATE", "INVALIDATE", "NOOP")
            },
            "facts_changed": len(result.facts),
            "entities_new": len(result.entities),
            "rejected": [r.model_dump() for r in getattr(result, "rejected", [])],
            "facts": facts,
            "failed": failed,
        }
        self.ingest_out.write(row)
        return row

    def _stats(self, memory: Any, unit: Unit, tenant: str) -> None:
        from mem0g.types import Tenant

        stats = memory.stats(user_id=tenant)
        facts = memory.store.facts(Tenant(user_id=tenant))
        _Appender(self.o.run_dir / "stores.jsonl").write(
            {
                "unit": unit.id,
                "entities": stats.entities,
                "relations": stats.relations,
                "valid_relations": stats.valid_relations,
                "facts": len(facts),
                "episodes": stats.episodes,
            }
        )


def _back_up(path: Path) -> Path:
    """Move `path` aside as `<stem>.<unix second>[-N].jsonl.bak` under a name no file has: a
    hard link fails where the name is taken (so two rescores within one second keep both
    backups), then the original goes."""
    stamp = int(time.time())
    for n in itertools.count():
        backup = path.with_name(f"{path.stem}.{stamp}{f'-{n}' if n else ''}.jsonl.bak")
        try:
            os.link(path, backup)
        except FileExistsError:
            continue
        except OSError:  # a file system with no hard links: look, then move
            if backup.exists():
                continue
            path.rename(backup)
            return backup
        path.unlink()
        return backup
    raise AssertionError("unreachable")


def _memory_client(config: MemoryConfig) -> Any:
    try:
        return LLMClient._make_client(config.llm)
    except LLMError as err:
        raise EvalInputError(f"full mode needs an LLM: {err}") from None


def run_eval(
    options: EvalOptions, *, on_prepared: Callable[[Harness], None] | None = None
) -> dict[str, Any]:
    """Check everything, then run (or resume) and render the report; returns results."""
    harness = Harness(options)
    harness.prepare()
    if on_prepared is not None:
        on_prepared(harness)
    return harness.run()


def run_locomo(data: Path | str, run_dir: Path | str, **options: Any) -> dict[str, Any]:
    return run_eval(EvalOptions("locomo", Path(data), Path(run_dir), **options))


def run_longmemeval(data: Path | str, run_dir: Path | str, **options: Any) -> dict[str, Any]:
    return run_eval(EvalOptions("longmemeval", Path(data), Path(run_dir), **options))


__all__ = ["EvalOptions", "Harness", "run_eval", "run_locomo", "run_longmemeval"]
