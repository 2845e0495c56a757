"""The Neo4j server the test suite runs against: a real server, a Cypher round trip
through the official driver, the Browser served at /browser/, and a clean stop.

The `neo4j`-marked tests start the Maven-assembled server (scripts/neo4j) in a
temporary home on free ports, whatever NEO4J_URI says: this file tests that route.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import fake_docker
import pytest
import yaml

from mem0g.testing.neo4j import (
    COMPOSE_FILE,
    SCRIPT,
    Neo4jServer,
    _docker_engine_answers,
    neo4j_for_tests,
    start_maven_server,
    start_neo4j,
    stop_neo4j_for_tests,
)


def _get(url: str) -> tuple[int, bytes, str]:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.read(), resp.headers.get("Content-Type", "")


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# the server of this module runs on one CPU (scripts/neo4j start --cpus), checked below
PINNED_CPU = max(os.sched_getaffinity(0))
# set by scripts/neo4j, and again by this module's server in its neo4j-extra.conf
MERGE_FACTOR = "internal.dbms.index.vector.standard_merge_factor"


# This module's servers (its own, and the Docker route's) answer a few statements each: they
# run on the C1 JIT alone, whose compiles cost a short-lived JVM less than C2's ever return.
# Side by side (load 19-30, 2026-12-02), the server's start cost 18.5 CPU seconds instead of
# 31.9, its restart 35.0 instead of 45.8, and the 8,000-vector index 23.9 instead of 26.7.
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"


@pytest.fixture(scope="module")
def server() -> Iterator[Neo4jServer]:
    srv = start_maven_server(
        cpus=str(PINNED_CPU),
        # a timeout in a form Neo4j shows its own way ("6m17s"), for the settings test
        settings=["db.transaction.timeout=377s", f"{MERGE_FACTOR}=5"],
        java_opts=SHORT_LIVED_JVM,
    )
    try:
        yield srv
    finally:
        srv.stop()


@pytest.mark.neo4j
def test_cypher_round_trip(server: Neo4jServer) -> None:
    import neo4j

    marker = f"probe-{uuid.uuid4()}"
    with neo4j.GraphDatabase.driver(server.uri, auth=(server.user, server.password)) as driver:
        driver.verify_connectivity()
        driver.execute_query("CREATE (:Mem0gProbe {marker: $marker, n: $n})", marker=marker, n=42)
        records, _, _ = driver.execute_query(
            "MATCH (p:Mem0gProbe {marker: $marker}) RETURN p.marker AS marker, p.n AS n",
            marker=marker,
        )
        assert [(r["marker"], r["n"]) for r in records] == [(marker, 42)]
        agent = driver.get_server_info().agent
        assert agent.startswith("Neo4j/5.26."), agent
        driver.execute_query("MATCH (p:Mem0gProbe {marker: $marker}) DELETE p", marker=marker)

        # auth is on: a wrong password is refused
        with (
            neo4j.GraphDatabase.driver(server.uri, auth=(server.user, "wrong-password")) as bad,
            pytest.raises(neo4j.exceptions.AuthError),
        ):
            bad.verify_connectivity()


@pytest.mark.neo4j
def test_listens_on_loopback_only(server: Neo4jServer) -> None:
    assert server.home is not None
    conf = (server.home / "conf" / "neo4j.conf").read_text()
    assert "server.default_listen_address=127.0.0.1" in conf
    assert re.search(r"^server\.https\.enabled=false$", conf, re.M)
    assert "dbms.security.auth_enabled=true" in conf
    # the discovery document advertises the loopback Bolt address the Browser should use
    status, body, _ = _get(f"{server.http_url}/")
    assert status == 200
    discovery = json.loads(body)
    assert discovery["bolt_direct"] == server.uri
    assert discovery["neo4j_edition"] == "community"


@pytest.mark.neo4j
def test_browser_is_served(server: Neo4jServer) -> None:
    assert server.browser_url is not None
    status, body, ctype = _get(server.browser_url)
    assert status == 200
    assert ctype.startswith("text/html")
    html = body.decode("utf-8")
    assert "<title>Neo4j Browser</title>" in html
    # What the page needs to run: its scripts and stylesheets, plus the favicon.
    # (Browser 5.24.0's index.html also names apple-touch-icon-*/android-chrome-*
    # icons that its own jar does not contain; they 404 in every Neo4j install.)
    scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', html)
    styles = re.findall(r'<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"', html)
    styles += re.findall(r'<link[^>]*href="([^"]+\.css)"', html)
    assert scripts, f"no scripts referenced in index.html: {html[:500]}"
    total = 0
    for asset in [*sorted(set(scripts + styles)), "assets/images/device-icons/favicon.ico"]:
        assert not re.match(r"^(https?:)?//", asset), f"asset from elsewhere: {asset}"
        status, content, _ = _get(server.browser_url + asset.removeprefix("./"))
        assert status == 200, asset
        assert content, asset
        total += len(content)
    assert total > 1_000_000  # the Browser's bundles are several MB


@pytest.mark.neo4j
def test_cpus_pin_every_server_thread(server: Neo4jServer) -> None:
    """`--cpus`: set before the JVM starts, so every thread it made is on that CPU only."""
    assert server.home is not None
    state = json.loads((server.home / "run" / "mem0g-server.json").read_text())
    assert state["cpus"] == [PINNED_CPU]
    pid = int((server.home / "run" / "neo4j.pid").read_text())
    threads = list(Path(f"/proc/{pid}/task").iterdir())
    assert len(threads) > 20  # a JVM: GC, compiler, Bolt and Neo4j's own threads
    for task in threads:
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            assert os.sched_getaffinity(int(task.name)) == {PINNED_CPU}, task.name


@pytest.mark.neo4j
def test_small_index_segments_are_not_cached_in_ram(server: Neo4jServer) -> None:
    """The JVM runs with Neo4j's toggle for its in-memory cache of small index segments at 0,
    before MEM0G_NEO4J_JAVA_OPTS (which may set it back: the last -D wins), which this
    module's server starts with its own flags first (start_maven_server's `java_opts`)."""
    assert server.home is not None
    pid = int((server.home / "run" / "neo4j.pid").read_text())
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    flag = "-Dorg.neo4j.kernel.api.impl.index.storage.DirectoryFactory.max_cached_mb=0"
    assert flag in argv
    assert argv.index(flag) < argv.index("org.neo4j.server.CommunityEntryPoint")
    extra = f"{SHORT_LIVED_JVM} {os.environ.get('MEM0G_NEO4J_JAVA_OPTS', '')}".split()
    assert argv[argv.index(flag) + 1 : argv.index(flag) + 1 + len(extra)] == extra


@pytest.mark.neo4j
def test_extra_settings_reach_the_server(server: Neo4jServer) -> None:
    """start_maven_server(settings=...): lines of conf/neo4j-extra.conf, appended by
    scripts/neo4j to the neo4j.conf it writes (how the benchmark passes --neo4j-setting)."""
    import neo4j

    with neo4j.GraphDatabase.driver(server.uri, auth=(server.user, server.password)) as driver:
        records, _, _ = driver.execute_query(
            "SHOW SETTINGS YIELD name, value WHERE name = $name RETURN value",
            name="db.transaction.timeout",
        )
    assert [r["value"] for r in records] == ["6m17s"]


@pytest.mark.neo4j
def test_a_setting_of_neo4j_extra_conf_replaces_the_scripts_own(server: Neo4jServer) -> None:
    """Neo4j refuses to start when a setting is declared twice: scripts/neo4j leaves out its
    own line for a setting that neo4j-extra.conf declares (the server above started)."""
    assert server.home is not None
    conf = (server.home / "conf" / "neo4j.conf").read_text().splitlines()
    declared = [line for line in conf if line.startswith(f"{MERGE_FACTOR}=")]
    assert declared == [f"{MERGE_FACTOR}=5"]
    buffer = [line for line in conf if line.startswith("internal.dbms.index.vector.population")]
    (heap,) = [line.split("=")[1] for line in conf if line.startswith("server.memory.heap.max")]
    heap_mib = int(heap[:-1]) * (1024 if heap.endswith("g") else 1)
    assert buffer == [f"internal.dbms.index.vector.population_ram_buffer_size={heap_mib // 8}"]


def _segments_of_a_populated_index(server: Neo4jServer, home: Path | None = None) -> list[str]:
    """Segment files of a vector index populated from 8,000 stored 384-dim vectors, after
    checking that it answers (dropped again afterwards)."""
    import neo4j
    import numpy as np

    vectors = np.random.default_rng(3).normal(size=(8000, 384)).astype(np.float32)
    label = f"Seg{uuid.uuid4().hex[:8]}"
    index = f"seg_{uuid.uuid4().hex[:8]}"
    auth = (server.user, server.password)
    with neo4j.GraphDatabase.driver(server.uri, auth=auth) as driver, driver.session() as s:
        for start in range(0, len(vectors), 1000):
            rows = [v.tolist() for v in vectors[start : start + 1000]]
            s.run(f"UNWIND $rows AS v CREATE (:{label} {{v: v}})", rows=rows).consume()
        s.run(
            f"CREATE VECTOR INDEX {index} FOR (n:{label}) ON n.v OPTIONS {{indexConfig: "
            "{`vector.dimensions`: 384, `vector.similarity_function`: 'cosine'}}"
        ).consume()
        s.run("CALL db.awaitIndexes(300)").consume()
        (record,) = list(s.run("SHOW INDEXES YIELD id, name WHERE name = $n RETURN id", n=index))
        hits = s.run(
            "CALL db.index.vector.queryNodes($index, 5, $q) YIELD node, score RETURN score",
            index=index,
            q=vectors[7].tolist(),
        ).value()
        home = home or server.home
        assert home is not None
        folder = home / "data" / "databases" / "neo4j" / "schema" / "index"
        (index_dir,) = folder.glob(f"vector-*/{record['id']}")
        segments = sorted(p.name for p in index_dir.rglob("*.si"))
        s.run(f"DROP INDEX {index}").consume()
        s.run(f"MATCH (n:{label}) DELETE n").consume()
    assert hits[0] > 0.999  # the index answers: vector 7 is its own nearest
    return segments


def compose_settings(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The neo4j.conf settings docker/compose.yml gives the official image, with every
    ${VAR:-default} at its default."""
    service = yaml.safe_load(COMPOSE_FILE.read_text())["services"]["neo4j"]
    for name in re.findall(r"\$\{(\w+)", COMPOSE_FILE.read_text()):
        monkeypatch.delenv(name, raising=False)
    return fake_docker.image_settings(service["environment"])


def test_compose_settings_are_what_scripts_neo4j_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    """docker/compose.yml gives the official image the vector-index settings and the JVM flag
    scripts/neo4j uses; test_docker_route_through_pytest_docker starts Neo4j 5.26 with them."""
    settings = compose_settings(monkeypatch)
    assert settings["internal.dbms.index.vector.standard_merge_factor"] == "4"
    assert settings["internal.dbms.index.vector.population_ram_buffer_size"] == "64"
    assert settings["server.memory.heap.max_size"] == "512m"
    flag = "-Dorg.neo4j.kernel.api.impl.index.storage.DirectoryFactory.max_cached_mb=0"
    assert settings["server.jvm.additional"] == flag  # what scripts/neo4j passes the JVM
    image = yaml.safe_load(COMPOSE_FILE.read_text())["services"]["neo4j"]["image"]
    assert re.fullmatch(r"\$\{NEO4J_IMAGE:-neo4j:5\.26-community\}", image)


def test_bad_cpus_are_refused_before_anything_starts(tmp_path: Path) -> None:
    for bad in ("x", "4096", "1-"):
        proc = subprocess.run(
            [sys.executable, str(SCRIPT), "start", "--home", str(tmp_path), "--cpus", bad],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2, proc.stdout + proc.stderr  # argparse's usage error
        assert "--cpus" in proc.stderr and ("not a CPU list" in proc.stderr
                                            or "not available" in proc.stderr)  # fmt: skip
        assert not (tmp_path / "run").exists()


@pytest.mark.neo4j
def test_restart_is_a_fresh_jvm_on_the_same_data_ports_and_password(server: Neo4jServer) -> None:
    """Neo4jServer.restart (the benchmark's cold phases): another process, the same
    endpoint, credentials, CPU pinning and data."""
    import neo4j

    assert server.home is not None
    pid_file = server.home / "run" / "neo4j.pid"
    before = int(pid_file.read_text().split()[0])
    marker = f"restart-{uuid.uuid4()}"
    auth = (server.user, server.password)
    with neo4j.GraphDatabase.driver(server.uri, auth=auth) as driver:
        driver.execute_query("CREATE (:Mem0gProbe {marker: $marker})", marker=marker)
    mine = os.sched_getaffinity(0)
    others = mine - {PINNED_CPU}
    if others:  # a caller pinned away from the server's CPU (bench --client-cpus) can restart it
        os.sched_setaffinity(0, others)
    try:
        server.restart()
    finally:
        os.sched_setaffinity(0, mine)
    after = int(pid_file.read_text().split()[0])
    assert after != before and not _alive(before) and _alive(after)
    assert os.sched_getaffinity(after) == {PINNED_CPU}
    with neo4j.GraphDatabase.driver(server.uri, auth=auth) as driver:
        records, _, _ = driver.execute_query(
            "MATCH (p:Mem0gProbe {marker: $marker}) DELETE p RETURN count(*) AS n", marker=marker
        )
        assert records[0]["n"] == 1


@pytest.mark.neo4j
def test_status_and_stop(server: Neo4jServer) -> None:
    """Stop through scripts/neo4j (by the pid file) and check that the server is gone."""
    assert server.home is not None
    home = str(server.home)
    bolt_port = int(server.uri.rsplit(":", 1)[1])
    status = subprocess.run(
        [sys.executable, str(SCRIPT), "status", "--home", home, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 0, status.stdout + status.stderr
    info = json.loads(status.stdout)
    assert info["running"] and info["bolt_open"] and info["bolt_uri"] == server.uri
    pid = info["pid"]

    server.stop()  # scripts/neo4j stop --home ...; SIGTERM, SIGKILL after a timeout
    assert not _port_open(bolt_port)
    assert not _alive(pid)
    if server.home.exists():  # kept with MEM0G_NEO4J_KEEP_HOME
        again = subprocess.run(
            [sys.executable, str(SCRIPT), "status", "--home", home],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert again.returncode == 3, again.stdout


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_env_route_starts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """NEO4J_URI wins: the module returns it as is and stops nothing."""
    stop_neo4j_for_tests()
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    monkeypatch.setenv("NEO4J_USERNAME", "someone")
    monkeypatch.setenv("NEO4J_PASSWORD", "secret-pw")
    try:
        assert neo4j_for_tests() == ("bolt://127.0.0.1:1", "someone", "secret-pw")
        assert neo4j_for_tests() == ("bolt://127.0.0.1:1", "someone", "secret-pw")
    finally:
        stop_neo4j_for_tests()


def test_docker_route_can_be_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0G_NEO4J_NO_DOCKER", "1")
    assert _docker_engine_answers() is False


# A server of its own and 8,000 vectors (99 s at load 12-14): handed out last, as the file's
# order had it, it ran alone for its last 51 s while the other worker had finished
# (2026-12-03, the whole suite on two workers); `long` tests go first in their phase.
@pytest.mark.neo4j
@pytest.mark.long
def test_docker_route_through_pytest_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Docker route's own code, run against tests/fake_docker.py: a TEST DOUBLE for the
    Docker engine that answers `docker info` and the compose commands pytest-docker runs with
    the Maven-assembled Neo4j on the ports and password compose would be given. With no
    NEO4J_URI, start_neo4j() takes Docker before Maven, and stop() leaves nothing behind.

    The server runs with docker/compose.yml's settings, as the image would: Neo4j 5.26's
    strict validation (on by default) refuses any setting it does not declare, internal ones
    too (a misspelt internal setting was refused, checked by hand), and with them a populated
    vector index is one HNSW segment. Neo4j 5.26's own settings leave one in many, and a
    query searches each: these 8,000 vectors (12 MB) made 3 segments with its defaults
    (checked by hand). The compose file's values are scripts/neo4j's at its default heap
    (test_compose_settings_are_what_scripts_neo4j_sets), so this is the suite's one
    populated-index check (it ran on this module's server too, 17-20 server CPU s more)."""
    shim = tmp_path / "bin" / "docker"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake_docker.__file__}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MEM0G_FAKE_DOCKER_STATE", str(tmp_path / "state"))
    java_opts = f"{SHORT_LIVED_JVM} {os.environ.get('MEM0G_NEO4J_JAVA_OPTS', '')}".strip()
    monkeypatch.setenv("MEM0G_NEO4J_JAVA_OPTS", java_opts)  # (scripts/neo4j reads it)
    settings = compose_settings(monkeypatch)  # every ${VAR} of the compose file at its default
    for name in ("NEO4J_URI", "MEM0G_NEO4J_NO_DOCKER", "NEO4J_PASSWORD", "NEO4J_BOLT_PORT"):
        monkeypatch.delenv(name, raising=False)
    import neo4j

    server = start_neo4j()
    home = tmp_path / "state" / f"mem0g-test-{os.getpid()}"
    try:
        assert server.kind == "docker" and home.is_dir()
        assert server.password and os.environ["NEO4J_PASSWORD"] == server.password
        with neo4j.GraphDatabase.driver(server.uri, auth=(server.user, server.password)) as d:
            records, _, _ = d.execute_query(
                "SHOW SETTINGS YIELD name, value WHERE name = 'dbms.usage_report.enabled' "
                "RETURN value"
            )
            assert [r["value"] for r in records] == ["false"]  # from the compose file
        status, _, _ = _get(f"{server.browser_url}")
        assert status == 200
        conf = (home / "conf" / "neo4j.conf").read_text().splitlines()
        assert {f"{key}={value}" for key, value in settings.items()} <= set(conf)
        assert not any("strict_validation" in line for line in conf)  # on, by default
        assert _segments_of_a_populated_index(server, home) == ["_0.si"]
        bolt_port = int(server.uri.rsplit(":", 1)[1])
    finally:
        server.stop()
    assert not home.exists()  # `down -v`
    assert not _port_open(bolt_port)
    assert "NEO4J_PASSWORD" not in os.environ and "NEO4J_BOLT_PORT" not in os.environ
