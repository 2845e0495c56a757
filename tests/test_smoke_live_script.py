"""Plumbing of scripts/smoke_live.py against the scripted TEST DOUBLE server (not a model), so
the live smoke (`make smoke-live`, not in `make test`) cannot rot between its runs: the demo
and the LoCoMo slice steps run, count, check the store and survive invalid answers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

from mem0g.testing import ScriptedLLMServer

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "smoke_live.py"
LOCOMO = Path(__file__).parent / "data" / "eval" / "locomo_tiny.json"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("smoke_live", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_demo_and_locomo_steps_against_the_test_double(tmp_path: Path) -> None:
    smoke = _load()
    placeholder = {"entities": [{"name": "I", "type": "person"}]}
    rules = [
        # a weak model's answers: junk first (one retry), then a placeholder entity
        {"task": "extract_entities", "responses": [{"raw": "I think so"}, placeholder]},
        {"task": "extract_facts", "response": {"facts": []}},
        {"task": "summarize", "response": {"summary": "-"}},
        {"match": {"contains": "Gold answer"}, "response": {"raw": '{"label": "WRONG"}'}},
        {"match": {"contains": "Select the correct answer"}, "response": {"raw": "(b)"}},
        {"response": {"raw": "I don't know"}},
    ]  # fmt: skip
    with ScriptedLLMServer(rules) as server:
        demo = smoke.run_demo(server.base_url, "tools", tmp_path / "demo", "hashing")
        args = SimpleNamespace(turns=2, questions=1, judge_runs=1, embedder="hashing")
        locomo = smoke.run_locomo(server.base_url, "tools", LOCOMO, tmp_path / "lo", args)
    assert demo["invalid_answers"] == {"extract_entities": 1} and demo["retries"] == 1
    assert demo["given_up"] == {}
    assert demo["calls_by_task"]["extract_entities"] == 6  # 5 episodes + the retry
    assert demo["calls_by_task"]["summarize"] == 1  # the background refresh counts too
    assert {r["text"] for r in demo["rejected"]} == {"I"}
    assert demo["store"] == {"entities": 0, "edges": 0, "facts": 0, "dangling_edges": 0,
                             "consistent": True}  # fmt: skip
    # 6 extract_entities, 5 extract_facts, 1 background summary (17 messages >= 10)
    assert demo["failed_adds"] == [] and demo["modes"] == {"tools": 12}
    assert locomo["adds"] == 2 and locomo["store"]["consistent"]
    assert locomo["scores"]["overall 1-4"]["J_mean"] == 0.0
