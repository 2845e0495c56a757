"""TEST DOUBLE for a Docker engine: the few `docker` commands mem0g/testing/neo4j.py's Docker
route runs through pytest-docker, answered with the Maven-assembled Neo4j (scripts/neo4j).

There is no Docker engine on the machines this project is built on, so this stands in for one
to exercise the route's own code: the order of routes, pytest-docker's calls, the ports and the
password handed to compose, and the clean-up. It reads docker/compose.yml as compose would
(${VAR:-default} from the environment), starts Neo4j on the published ports with the password
of NEO4J_AUTH and the settings the image's entrypoint would write (NEO4J_a_b__c -> a.b_c), and
stops it at `down`. It is never a Docker engine: images, volumes and containers do not exist.

    docker info
    docker compose -f FILE -p PROJECT up --wait | port SERVICE PORT | down -v

State (one server home per project) lives under $MEM0G_FAKE_DOCKER_STATE.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "neo4j"
# the image's own variables, which its entrypoint does not write to neo4j.conf
IMAGE_CONTROLS = {"NEO4J_AUTH", "NEO4J_AUTH_PATH", "NEO4J_ACCEPT_LICENSE_AGREEMENT",
                  "NEO4J_DEBUG", "NEO4J_EDITION", "NEO4J_HOME", "NEO4J_PLUGINS"}  # fmt: skip
_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


def interpolate(value: Any) -> str:
    """Compose's ${VAR} and ${VAR:-default}, from this process's environment."""
    return _VARIABLE.sub(lambda m: os.environ.get(m[1]) or (m[2] or ""), str(value))


def image_settings(environment: dict[str, Any]) -> dict[str, str]:
    """neo4j.conf settings the official image's entrypoint writes for these variables."""
    settings = {}
    for name, value in environment.items():
        if name.startswith("NEO4J_") and name not in IMAGE_CONTROLS:
            key = name.removeprefix("NEO4J_").replace("_", ".").replace("..", "_")
            settings[key] = interpolate(value)
    return settings


def published(service: dict[str, Any], container_port: int) -> tuple[str, int]:
    """(host address, host port) that `ports` publishes `container_port` on."""
    for entry in service["ports"]:
        host, port, inner = interpolate(entry).rsplit(":", 2)
        if int(inner) == container_port:
            return host, int(port)
    raise SystemExit(f"no published port for {container_port}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["info"]:
        print("fake docker (a test double; no engine)")
        return 0
    if argv[:1] != ["compose"]:
        print(f"fake docker: unsupported command {argv}", file=sys.stderr)
        return 2
    args, files, project = argv[1:], [], "default"
    while args and args[0] in ("-f", "-p"):
        if args[0] == "-f":
            files.append(args[1])
        else:
            project = args[1]
        args = args[2:]
    (compose_file,) = files
    service = yaml.safe_load(Path(compose_file).read_text())["services"]["neo4j"]
    home = Path(os.environ["MEM0G_FAKE_DOCKER_STATE"]) / project
    command, *rest = args
    if command == "up":
        environment = service["environment"]
        password = interpolate(environment["NEO4J_AUTH"]).removeprefix("neo4j/")
        settings = image_settings(environment)
        (home / "conf").mkdir(parents=True, exist_ok=True)
        lines = [f"{key}={value}" for key, value in settings.items()]
        (home / "conf" / "neo4j-extra.conf").write_text("\n".join(lines) + "\n")
        _, bolt = published(service, 7687)
        _, http = published(service, 7474)
        start = [sys.executable, str(SCRIPT), "start", "--home", str(home),
                 "--bolt-port", str(bolt), "--http-port", str(http)]  # fmt: skip
        env = dict(os.environ, NEO4J_PASSWORD=password)
        return subprocess.run(start, env=env, stdout=sys.stderr).returncode
    if command == "port":
        _service, container_port = rest  # (the file has one service)
        host, port = published(service, int(container_port))
        print(f"{host}:{port}")
        return 0
    if command == "down":
        stopped = subprocess.run([sys.executable, str(SCRIPT), "stop", "--home", str(home)],
                                 stdout=sys.stderr).returncode  # fmt: skip
        if "-v" in rest:
            shutil.rmtree(home, ignore_errors=True)
        return stopped
    print(f"fake docker: unsupported compose command {args}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
