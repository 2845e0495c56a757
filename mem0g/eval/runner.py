"""The harness: ingest each unit into its own tenant, then answer (full mode) or retrieve
(retrieval mode) its questions, writing every step to the run directory as it goes.

Run directory:
    config.json      what was asked (a resumed run must ask the same)
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

import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from string import Template
from typing import Any

import numpy as np

from mem0g.config import MemoryConfig
from mem0g.eval.data import (
    NOT_MENTIONED,
    Dataset,
    EvalInputError,
    Question,
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
from mem0g.eval.metrics import bleu1, normalize_answer, recall_at_k, token_f1
from mem0g.llm.client import LLMClient, LLMError
from mem0g.resources import read_text
from mem0g.stores.vectors import unit_rows, unit_vector
from mem0g.types import AddResult, Usage

KS = (5, 10, 20)
MODES = ("full", "retrieval")
FACTS = ("turns", "observation")
STORES = ("embedded", "neo4j")
# a resumed run must agree on these; limits, categories and workers may change
_MUST_MATCH = (
    "benchmark",
    "mode",
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


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a kill
                continue
    return rows


class _Appender:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, row: dict[str, Any]) -> None:
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _pairs(unit: Unit) -> list[tuple[str, list[Any]]]:
    """Full mode: turns added as message pairs within each session, in order."""
    steps = []
    for session in unit.sessions:
        turns = session.turns
        for i in range(0, len(turns), 2):
            steps.append((session.id, turns[i : i + 2]))
    return steps


def _tenant_id(prefix: str, unit: Unit) -> str:
    return f"{prefix}{unit.id}"


def _speaker_messages(turns: list[Any]) -> list[dict[str, Any]]:
    return [{"role": t.role, "name": t.speaker, "content": t.text} for t in turns]


class Harness:
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
        questions_path = o.run_dir / "questions.jsonl"
        if o.rescore and questions_path.exists():
            questions_path.replace(o.run_dir / f"questions.{int(time.time())}.jsonl.bak")
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
                total = sum(self._unit_work(u) for u in self.units)
                overall = bar.add("all units", total)
                with ThreadPoolExecutor(max_workers=o.workers, thread_name_prefix="eval") as pool:
                    futures = [
                        pool.submit(self._run_unit, memory, unit, bar, overall)
                        for unit in self.units
                    ]
                    for future in as_completed(futures):
                        exc = future.exception()
                        if exc is not None and not isinstance(exc, _Stop) and error is None:
                            error = exc
                            self.stop.set()
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
        """(session, messages, refs per message, timestamp) for each add of the unit."""
        o = self.o
        times = {s.id: s.time for s in unit.sessions}
        steps: list[tuple[str, list[dict[str, Any]], list[list[str]], Any]] = []
        if o.mode == "full":
            for sid, turns in _pairs(unit):
                steps.append((sid, _speaker_messages(turns), [[t.ref] for t in turns], times[sid]))
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

    def _unit_work(self, unit: Unit) -> int:
        steps = len(self._steps(unit))
        done = sum(1 for i in range(steps) if (unit.id, i) in self.ingested)
        todo = sum(1 for q in unit.questions if q.id not in self.answered)
        return steps - done + todo

    def _run_unit(self, memory: Any, unit: Unit, bar: Any, overall: Any) -> None:
        tenant = _tenant_id(self.prefix, unit)
        steps = self._steps(unit)
        mine = bar.add(f"{unit.id}", self._unit_work(unit))
        fact_refs: dict[str, list[str]] = {}
        try:
            for i, (session, messages, refs, when) in enumerate(steps):
                done = self.ingested.get((unit.id, i))
                if done is None:
                    if self.stop.is_set():
                        raise _Stop()
                    done = self._add(memory, unit, tenant, i, session, messages, refs, when)
                    bar.advance(mine, overall)
                for fid, r in done.get("facts", []):
                    fact_refs[fid] = r
            todo = [q for q in unit.questions if q.id not in self.answered]
            if not todo:
                return
            if self.o.mode == "retrieval":  # over exactly what mem0g stored
                stored = [(m["content"], r) for _, ms, refs, _ in steps
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
                bar.advance(mine, overall)
            self._stats(memory, unit, tenant)
        finally:
            bar.remove(mine)

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

    # ------------------------------------------------------------------ retrieval mode

    def _retrieve(
        self,
        memory: Any,
        tenant: str,
        q: Question,
        fact_refs: dict[str, list[str]],
        baselines: _Baselines,
    ) -> dict[str, Any]:
        k = max(KS)
        started = time.perf_counter()
        hits = memory.search(q.text, user_id=tenant, limit=k)
        ms = (time.perf_counter() - started) * 1000
        ranked = {
            "mem0g": [fact_refs.get(f.id, []) for f in hits.facts],
            "dense": baselines.dense(q.text, k),
            "bm25": baselines.bm25(q.text, k),
            "dense+bm25 rrf": baselines.rrf(q.text, k),
        }
        block = memory.context_block(
            q.text, user_id=tenant, limit=self.o.context_limit, max_tokens=self.o.context_tokens
        )  # what an answer prompt would get at k = context_limit (10)
        row: dict[str, Any] = {
            "search_ms": round(ms, 2),
            "context_tokens": block.tokens,
            "systems": {},
        }
        if self.o.benchmark == "locomo":
            relevant = {"evidence": q.evidence}
        else:
            turns = [t.ref for s in baselines.unit.sessions for t in s.turns if t.has_answer]
            relevant = {"session": q.answer_sessions, "turn": turns}
        if q.abstention:
            row["skipped"] = "abstention (no evidence to retrieve)"
        for system, refs in ranked.items():
            scores: dict[str, Any] = {"top": refs[:k]}
            for kind, wanted in relevant.items():
                if q.abstention or not wanted:
                    continue
                items = (
                    refs if kind != "session" else [[r.rsplit(":", 1)[0] for r in x] for x in refs]
                )
                for kk in KS:
                    scores[f"{kind}_recall@{kk}"] = recall_at_k(items, wanted, kk)
            row["systems"][system] = scores
        return row

    # ------------------------------------------------------------------ full mode

    def _answer(self, memory: Any, tenant: str, q: Question) -> dict[str, Any]:
        assert self.answer_llm is not None and self.judge_llm is not None
        started = time.perf_counter()
        context = memory.context(
            q.text, user_id=tenant, limit=self.o.context_limit, max_tokens=self.o.context_tokens
        )
        # the conversation's own id, not the run's tenant id: the same prompt in every run,
        # so a shared cache answers it
        context = context.replace(tenant, q.unit)
        search_ms = (time.perf_counter() - started) * 1000
        row: dict[str, Any] = {
            "question": q.text,
            "gold": q.answer,
            "search_ms": round(search_ms, 2),
            "context_tokens": (len(context) + 3) // 4,
        }
        if self.o.benchmark == "locomo" and q.category == "5":
            options = [NOT_MENTIONED, q.adversarial_answer or "(no answer given)"]
            if _coin(q.id):
                options.reverse()
            text = _render(
                "eval_answer_adversarial",
                context=context,
                question=q.text,
                option_a=options[0],
                option_b=options[1],
            )
            answer = self.answer_llm.complete("", text)
            said = normalize_answer(answer["text"])
            chose_nm = "not mentioned" in said or said.strip() in {
                "a" if options[0] == NOT_MENTIONED else "b"
            }
            row.update(answer=answer["text"], adversarial=float(chose_nm), llm=[_use(answer)])
        else:
            date_line = f"(asked on {q.date:%d %B %Y})\n" if q.date else ""
            text = _render(
                "eval_answer", context=context, question=q.text, question_date_line=date_line
            )
            answer = self.answer_llm.complete("", text)
            verdicts, uses = [], [_use(answer)]
            for run in range(self.o.judge_runs):
                verdict = self._judge(q, answer["text"], run)
                verdicts.append(verdict["correct"])
                uses.append(_use(verdict))
            row.update(answer=answer["text"], judge=verdicts, llm=uses)
            if self.o.benchmark == "locomo":
                row.update(
                    f1=token_f1(answer["text"], q.answer or ""),
                    bleu1=bleu1(answer["text"], q.answer or ""),
                )
        row["question_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return row

    def _judge(self, q: Question, answer: str, run: int) -> dict[str, Any]:
        assert self.judge_llm is not None
        if self.o.benchmark == "locomo":
            text = _render("eval_judge_locomo", question=q.text, gold=q.answer or "", answer=answer)
            reply = self.judge_llm.complete("", text, run=run)
            return {**reply, "correct": _locomo_label(reply["text"])}
        rules = json.loads(read_text("prompts", "eval_judge_longmemeval_rules.json"))
        kind = "abstention" if q.abstention else q.category
        rule = rules.get(kind, rules["default"])
        gold_label = {"single-session-preference": "Rubric", "abstention": "Explanation"}.get(
            kind, "Correct answer"
        )
        text = _render(
            "eval_judge_longmemeval",
            question=q.text,
            gold=q.answer or "",
            answer=answer,
            rule=rule,
            gold_label=gold_label,
        )
        reply = self.judge_llm.complete("", text, run=run)
        return {**reply, "correct": _yes(reply["text"])}


def _memory_client(config: MemoryConfig) -> Any:
    try:
        return LLMClient._make_client(config.llm)
    except LLMError as err:
        raise EvalInputError(f"full mode needs an LLM: {err}") from None


def _render(name: str, **values: str) -> str:
    return Template(read_text("prompts", f"{name}.md")).safe_substitute(values)


def _use(reply: dict[str, Any]) -> dict[str, Any]:
    return {k: reply.get(k) for k in ("prompt_tokens", "completion_tokens", "cached", "ms")}


def _coin(key: str) -> bool:
    """A fixed coin per question (the option order of the forced choice)."""
    return hashlib.sha256(key.encode()).digest()[0] % 2 == 1


def _locomo_label(text: str) -> float:
    """CORRECT/WRONG from the judge's answer: the JSON label, else the last label word."""
    upper = text.upper()
    for marker in ('"LABEL": "CORRECT"', "'LABEL': 'CORRECT'"):
        if marker in upper.replace(" :", ":"):
            return 1.0
    positions = [(upper.rfind("CORRECT"), 1.0), (upper.rfind("WRONG"), 0.0)]
    pos, value = max(positions)
    if pos < 0:
        return 0.0
    if value == 1.0 and upper[max(0, pos - 2) : pos] == "IN":  # "INCORRECT"
        return 0.0
    return value


def _yes(text: str) -> float:
    words = normalize_answer(text).split()
    return 1.0 if (words and words[0] == "yes") or ("yes" in words and "no" not in words) else 0.0


class _Baselines:
    """Dense retrieval, BM25 and their plain RRF (k = 60) over the texts mem0g stored (the
    unit's turns, or its observations), with the run's embedding model."""

    def __init__(self, embedder: Any, unit: Unit, stored: list[tuple[str, list[str]]]) -> None:
        import bm25s

        self.unit = unit
        self.turns = stored  # (text, refs) of every stored item
        self.texts = [text for text, _ in stored]
        self.refs = [list(refs) for _, refs in stored]
        self.matrix = unit_rows(np.asarray(embedder.embed(self.texts), dtype=np.float32), None)
        self.embedder = embedder
        self._tokenize: Callable[[list[str]], list[list[str]]] = lambda texts: bm25s.tokenize(
            texts, stopwords="en", show_progress=False, return_ids=False
        )
        self.bm = bm25s.BM25()
        self.bm.index(
            bm25s.tokenize(self.texts, stopwords="en", show_progress=False), show_progress=False
        )

    def _dense(self, query: str, k: int) -> list[int]:
        if not self.turns:
            return []
        q, _ = unit_vector(self.embedder.embed([query])[0])
        return [int(i) for i in np.argsort(-(self.matrix @ q), kind="stable")[:k]]

    def _bm25(self, query: str, k: int) -> list[int]:
        if not self.turns:
            return []
        tokens = self._tokenize([query])
        if not tokens[0]:
            return []
        docs, scores = self.bm.retrieve(tokens, k=min(k, len(self.turns)), show_progress=False)
        return [int(i) for i, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def dense(self, query: str, k: int) -> list[list[str]]:
        return [self.refs[i] for i in self._dense(query, k)]

    def bm25(self, query: str, k: int) -> list[list[str]]:
        return [self.refs[i] for i in self._bm25(query, k)]

    def rrf(self, query: str, k: int, depth: int = 100) -> list[list[str]]:
        """Plain reciprocal-rank fusion of the two above (k = 60, equal weights)."""
        fused: dict[int, float] = {}
        for ranking in (self._dense(query, depth), self._bm25(query, depth)):
            for rank, i in enumerate(ranking, start=1):
                fused[i] = fused.get(i, 0.0) + 1.0 / (60 + rank)
        order = sorted(fused, key=lambda i: (-fused[i], i))[:k]
        return [self.refs[i] for i in order]


class _Bar:
    def __init__(self, progress: Any) -> None:
        self.p = progress
        self._lock = threading.Lock()

    def add(self, name: str, total: int) -> Any:
        if self.p is None:
            return None
        with self._lock:
            return self.p.add_task(name, total=total)

    def advance(self, *tasks: Any) -> None:
        if self.p is None:
            return
        with self._lock:
            for t in tasks:
                self.p.advance(t)

    def remove(self, task: Any) -> None:
        if self.p is None or task is None:
            return
        with self._lock:
            self.p.remove_task(task)


@contextmanager
def _progress(enabled: bool) -> Iterator[_Bar]:
    if not enabled:
        yield _Bar(None)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description:>16}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as progress:
        yield _Bar(progress)


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
