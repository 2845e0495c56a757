"""Property-based fuzzing of the OpenAPI spec (schemathesis): whatever the generated request,
no 500 and every response matches its documented status, content type and schema. Bounded
(a few examples per operation) so it stays fast; the store is the embedded one, the LLM the
scripted TEST DOUBLE answering every task with "nothing found". The service runs with keys
(as it must off loopback), so schemathesis also checks that a missing key is refused."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance
from service_support import live_server, service_memory

from mem0g.config import EmbedderConfig
from mem0g.embed import make_embedder
from mem0g.service.app import create_app
from mem0g.service.auth import add_key
from mem0g.service.settings import Limits, ServiceSettings
from mem0g.testing import ScriptedLLMServer

NOTHING = [
    {"task": "extract_entities", "response": {"entities": []}},
    {"task": "establish_relations", "response": {"relations": []}},
    {"task": "extract_facts", "response": {"facts": []}},
    {"task": "resolve_updates", "response": {"operations": []}},
    {"task": "update_memory", "response": {"operations": []}},
]
_llm = ScriptedLLMServer(NOTHING).start()
_home = Path(tempfile.mkdtemp(prefix="mem0g-fuzz-"))
KEY = add_key(_home / "keys.json", "fuzz", ["read", "write", "admin"], "*")


def _app():
    memory = service_memory(
        _home / "store", _llm, make_embedder(EmbedderConfig(provider="hashing"))
    )
    memory.add("Alice lives in Paris", user_id="alice", infer=False)
    limits = Limits(max_messages=5, max_query_chars=200, max_limit=20)
    settings = ServiceSettings(limits=limits, keys_file=_home / "keys.json")
    return create_app(memory, settings, close_memory=True)


def _stop_servers() -> None:
    _server.__exit__(None, None, None)
    _llm.stop()
    shutil.rmtree(_home, ignore_errors=True)


# One real server (its lifespan runs once), over loopback HTTP. Started at import because
# schemathesis reads the schema when it parametrizes the test (its fixture-based loader does
# not run on this pytest); stopped after the module, or at exit when the test is deselected.
_server = live_server(_app())
_base = _server.__enter__()
atexit.register(_stop_servers)
schema = schemathesis.openapi.from_url(f"{_base}/openapi.json")


@pytest.fixture(scope="module", autouse=True)
def _stopped_after_the_module():
    yield
    atexit.unregister(_stop_servers)
    _stop_servers()


@schema.parametrize()
@settings(
    max_examples=4,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure prints its curl line
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(case) -> None:
    # Two checks are left out: "at least one of user_id, agent_id, run_id" is not expressible
    # for query parameters in OpenAPI, so schema-valid requests naming no tenant get a 422;
    # and unknown query parameters are ignored (as HTTP APIs do), not rejected.
    case.call_and_validate(
        headers={"Authorization": f"Bearer {KEY}"},
        excluded_checks=[positive_data_acceptance, negative_data_rejection],
    )
