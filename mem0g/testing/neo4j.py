"""A real Neo4j server for tests and benchmarks, independent of pytest's fixture API (the
test suite, scripts/bench_*.py and users' own integration tests import it from here).

    from mem0g.testing.neo4j import neo4j_for_tests, stop_neo4j_for_tests, neo4j_session

    uri, user, password = neo4j_for_tests()   # started once per process, reused after
    ...
    stop_neo4j_for_tests()                     # also registered with atexit

    # or, e.g. in conftest.py:
    @pytest.fixture(scope="session")
    def neo4j_credentials():
        with neo4j_session() as (uri, user, password):
            yield uri, user, password

Where the server comes from, in this order:

1. ``NEO4J_URI`` (with ``NEO4J_USERNAME``, default ``neo4j``, and ``NEO4J_PASSWORD``)
   from the environment: an external server; nothing is started or stopped.
   ``NEO4J_HTTP_URL`` may name its HTTP endpoint (for Browser checks).
2. Docker, when ``docker info`` succeeds: ``docker/compose.yml`` through
   pytest-docker's ``get_docker_services`` (free ports, generated password,
   ``down -v`` at the end).
3. The Neo4j Community server assembled from Maven Central by ``scripts/neo4j``
   (needs ``java`` 17+ and, for the first fetch, ``mvn``), in a temporary home
   on free loopback ports with a generated password.

If none of them gives a server, :class:`Neo4jUnavailable` is raised: tests that
need Neo4j fail, they are never skipped.  Set ``MEM0G_NEO4J_NO_DOCKER=1`` to skip
the Docker route, ``MEM0G_NEO4J_KEEP_HOME=1`` to keep the temporary server home
(logs) after the stop.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# scripts/neo4j and docker/ live in the source checkout (an editable install, as `make`
# makes); from a wheel the Maven route reports the missing script (Neo4jUnavailable)
REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "neo4j"
COMPOSE_FILE = REPO / "docker" / "compose.yml"
USER = "neo4j"

__all__ = [
    "Neo4jServer",
    "Neo4jUnavailable",
    "current_server",
    "neo4j_for_tests",
    "neo4j_session",
    "start_docker_server",
    "start_maven_server",
    "stop_neo4j_for_tests",
]


class Neo4jUnavailable(RuntimeError):
    """No Neo4j server could be had (the message says why, route by route)."""


@dataclass
class Neo4jServer:
    """A running server and how to reach it; ``stop()`` is idempotent."""

    uri: str
    user: str
    password: str = field(repr=False)
    kind: str = "maven"  # "env", "docker" or "maven"
    http_url: str | None = None  # e.g. http://127.0.0.1:7474 (no trailing slash)
    home: Path | None = None  # the scripts/neo4j home ("maven" only)
    _stop: Callable[[], None] | None = field(default=None, repr=False)
    _restart: Callable[[dict[str, str]], None] | None = field(default=None, repr=False)

    @property
    def credentials(self) -> tuple[str, str, str]:
        return self.uri, self.user, self.password

    @property
    def browser_url(self) -> str | None:
        return f"{self.http_url}/browser/" if self.http_url else None

    def restart(self, java_opts: str | None = None) -> None:
        """Stop the server and start it again on the same home, ports and password, its data
        kept: a fresh JVM, as after a deploy or a crash ("maven" servers only). `java_opts`:
        this start's extra JVM flags instead of the first start's (MEM0G_NEO4J_JAVA_OPTS)."""
        if self._restart is None or self._stop is None:
            raise Neo4jUnavailable(f"a {self.kind} server cannot be restarted from here")
        self._restart({} if java_opts is None else {"MEM0G_NEO4J_JAVA_OPTS": java_opts})

    def cpu_seconds(self) -> float | None:
        """CPU seconds the server's JVM has used so far (user + system, from /proc), for a
        "maven" server that is running; None otherwise (Docker, NEO4J_URI, no /proc)."""
        if self.home is None:
            return None
        try:
            state = json.loads((self.home / "run" / "mem0g-server.json").read_text())
            with open(f"/proc/{int(state['pid'])}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, TypeError, ValueError, KeyError):
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()


# --------------------------------------------------------------------------- helpers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _free_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def _run_script(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 900,
    cpus: set[int] | None = None,
) -> str:
    """Run scripts/neo4j with this interpreter (so its Bolt check can use the driver); `cpus`:
    the CPU set it runs on (and its server inherits), whatever this process was pinned to."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        preexec_fn=None if cpus is None else functools.partial(os.sched_setaffinity, 0, cpus),
    )
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise Neo4jUnavailable(
            f"scripts/neo4j {args[0]} failed (exit {proc.returncode}):\n{output}"
        )
    return output


def _docker_engine_answers() -> bool:
    if os.environ.get("MEM0G_NEO4J_NO_DOCKER"):
        return False
    docker = shutil.which("docker")
    if not docker:
        return False
    try:
        proc = subprocess.run(
            [docker, "info"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


# --------------------------------------------------------------------------- routes


def server_from_env() -> Neo4jServer | None:
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        return None
    return Neo4jServer(
        uri=uri,
        user=os.environ.get("NEO4J_USERNAME") or os.environ.get("NEO4J_USER") or USER,
        password=os.environ.get("NEO4J_PASSWORD", ""),
        kind="env",
        http_url=(os.environ.get("NEO4J_HTTP_URL") or "").rstrip("/") or None,
    )


def start_maven_server(
    *,
    home: Path | str | None = None,
    bolt_port: int | None = None,
    http_port: int | None = None,
    password: str | None = None,
    heap: str | None = None,
    keep_home: bool | None = None,
    cpus: str | None = None,
    settings: Sequence[str] = (),
    java_opts: str = "",
) -> Neo4jServer:
    """Start the Maven-assembled server with scripts/neo4j; ``stop()`` stops it.

    By default: a fresh temporary home (deleted at the stop unless
    ``MEM0G_NEO4J_KEEP_HOME`` is set), free ports, a generated password. `settings`:
    extra neo4j.conf lines; `java_opts`: extra JVM flags, before MEM0G_NEO4J_JAVA_OPTS's
    (which win where they clash), for each start of this server (restart(java_opts=...)
    replaces both).
    """
    if not SCRIPT.is_file():
        raise Neo4jUnavailable(f"{SCRIPT} is missing")
    own_home = home is None
    home_path = Path(tempfile.mkdtemp(prefix="mem0g-neo4j-test-")) if home is None else Path(home)
    if keep_home is None:
        keep_home = bool(os.environ.get("MEM0G_NEO4J_KEEP_HOME"))
    if settings:  # extra neo4j.conf lines (key=value), appended by scripts/neo4j
        (home_path / "conf").mkdir(parents=True, exist_ok=True)
        (home_path / "conf" / "neo4j-extra.conf").write_text("\n".join(settings) + "\n")
    password = password or secrets.token_hex(16)
    env = dict(os.environ, NEO4J_PASSWORD=password)  # not on the command line
    if heap:
        env["MEM0G_NEO4J_HEAP"] = heap
    if java_opts:
        env["MEM0G_NEO4J_JAVA_OPTS"] = f"{java_opts} {env.get('MEM0G_NEO4J_JAVA_OPTS', '')}".strip()

    # a restart runs with the CPUs the first start had, even after the caller pinned itself
    # to others (the benchmark's --client-cpus)
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None

    def start(bolt: int, http: int, overrides: dict[str, str] | None = None) -> None:
        ports = ["--bolt-port", str(bolt), "--http-port", str(http)]
        cpu_set = ["--cpus", cpus] if cpus else []
        run_env = {**env, **(overrides or {})}
        _run_script("start", "--home", str(home_path), *ports, *cpu_set, env=run_env, cpus=allowed)

    last_error: Neo4jUnavailable | None = None
    for _attempt in range(3):  # free ports can be taken between choosing and binding
        bolt, http = _free_ports(2)
        bolt, http = bolt_port or bolt, http_port or http
        if bolt == http:
            raise Neo4jUnavailable(f"bolt and http ports must differ ({bolt})")
        try:
            start(bolt, http)
        except Neo4jUnavailable as exc:
            last_error = exc
            if "already in use" in str(exc) and not (bolt_port or http_port):
                continue
            break
        else:
            last_error = None
            break
    if last_error is not None:
        if own_home and not keep_home:
            shutil.rmtree(home_path, ignore_errors=True)
        raise last_error

    def restart(overrides: dict[str, str]) -> None:
        _run_script("stop", "--home", str(home_path), timeout=180)
        start(bolt, http, overrides)

    def stop() -> None:
        try:
            _run_script("stop", "--home", str(home_path), timeout=180)
        finally:
            if own_home and not keep_home:
                shutil.rmtree(home_path, ignore_errors=True)

    return Neo4jServer(
        uri=f"bolt://127.0.0.1:{bolt}",
        user=USER,
        password=password,
        kind="maven",
        http_url=f"http://127.0.0.1:{http}",
        home=home_path,
        _stop=stop,
        _restart=restart,
    )


def start_docker_server(timeout: float = 300) -> Neo4jServer:
    """docker/compose.yml through pytest-docker, on free ports with a generated password."""
    from pytest_docker.plugin import get_docker_services  # dev dependency

    password = secrets.token_hex(16)
    bolt, http = _free_ports(2)
    overrides = {
        "NEO4J_PASSWORD": password,
        "NEO4J_BOLT_PORT": str(bolt),
        "NEO4J_HTTP_PORT": str(http),
    }
    saved = {key: os.environ.get(key) for key in overrides}
    os.environ.update(overrides)  # compose interpolates these at `up` and `down`

    def restore_env() -> None:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    stack = contextlib.ExitStack()
    stack.callback(restore_env)
    try:
        services = stack.enter_context(
            get_docker_services(
                "docker compose",
                str(COMPOSE_FILE),
                f"mem0g-test-{os.getpid()}",
                ["up --wait"],  # waits for the healthcheck (a Cypher round trip)
                ["down -v"],
            )
        )
        bolt = services.port_for("neo4j", 7687)
        http = services.port_for("neo4j", 7474)
        uri = f"bolt://127.0.0.1:{bolt}"
        services.wait_until_responsive(
            check=lambda: _bolt_ok(uri, USER, password), timeout=timeout, pause=1.0
        )
    except Exception as exc:
        stack.close()
        raise Neo4jUnavailable(f"docker compose route failed: {exc}") from exc
    return Neo4jServer(
        uri=uri,
        user=USER,
        password=password,
        kind="docker",
        http_url=f"http://127.0.0.1:{http}",
        _stop=stack.close,
    )


def _bolt_ok(uri: str, user: str, password: str) -> bool:
    try:
        import neo4j

        with neo4j.GraphDatabase.driver(uri, auth=(user, password)) as driver:
            driver.verify_connectivity()
        return True
    except Exception:
        return False


def start_neo4j(*, settings: Sequence[str] = (), java_opts: str = "") -> Neo4jServer:
    """A server by the first route that works (env, Docker, Maven); raises if none does.
    `settings` and `java_opts` reach a Maven-route server only (start_maven_server)."""
    env_server = server_from_env()
    if env_server is not None:
        return env_server
    problems: list[str] = []
    if _docker_engine_answers():
        try:
            return start_docker_server()
        except Neo4jUnavailable as exc:
            problems.append(str(exc))
    else:
        problems.append("docker: no Docker engine answers `docker info`")
    try:
        return start_maven_server(settings=settings, java_opts=java_opts)
    except Neo4jUnavailable as exc:
        problems.append(str(exc))
    except (OSError, subprocess.TimeoutExpired) as exc:
        problems.append(f"scripts/neo4j: {type(exc).__name__}: {exc}")
    raise Neo4jUnavailable(
        "no Neo4j server for the tests (set NEO4J_URI/NEO4J_USERNAME/NEO4J_PASSWORD for an "
        "external one):\n- " + "\n- ".join(problems)
    )


# --------------------------------------------------------------------------- one per process

_lock = threading.Lock()
_server: Neo4jServer | None = None
_users = 0


def neo4j_for_tests() -> tuple[str, str, str]:
    """(uri, user, password) of the test server, started on the first call only."""
    global _server
    with _lock:
        if _server is None:
            _server = start_neo4j()
            atexit.register(stop_neo4j_for_tests)
        return _server.credentials


def current_server() -> Neo4jServer | None:
    """The server neo4j_for_tests() started or found, if any (for http_url, kind, home)."""
    return _server


def stop_neo4j_for_tests() -> None:
    """Stop the server neo4j_for_tests() started (no-op for NEO4J_URI, or if none)."""
    global _server, _users
    with _lock:
        server, _server, _users = _server, None, 0
    if server is not None:
        server.stop()


@contextlib.contextmanager
def neo4j_session() -> Iterator[tuple[str, str, str]]:
    """Context manager around neo4j_for_tests(): stops the server when the last user leaves."""
    global _users
    credentials = neo4j_for_tests()
    with _lock:
        _users += 1
    try:
        yield credentials
    finally:
        with _lock:
            _users -= 1
            last = _users <= 0
        if last:
            stop_neo4j_for_tests()


def describe(server: Neo4jServer) -> dict[str, Any]:
    """A printable summary without the password."""
    return {
        "kind": server.kind,
        "uri": server.uri,
        "user": server.user,
        "http_url": server.http_url,
        "home": str(server.home) if server.home else None,
    }


if __name__ == "__main__":  # manual check: python -m mem0g.testing.neo4j
    started = time.monotonic()
    uri, user, _password = neo4j_for_tests()
    server = current_server()
    assert server is not None
    print(json.dumps(describe(server), indent=2))
    print(f"ready in {time.monotonic() - started:.1f} s; stopping")
    stop_neo4j_for_tests()
