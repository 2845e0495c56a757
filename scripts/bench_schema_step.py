"""What the Neo4j store's schema step at open costs on a freshly started server (issue #18).

A store's first call applies the schema. Since the schema check (stores/neo4j/schema_check.py)
a database that holds the schema costs two reads (`check`); before, every store ran the ~60
`IF NOT EXISTS` DDL statements and the vector-index steps (`ddl`, forced here by a gap). Both
are timed right after a server restart (a fresh JVM, as after a deploy), in alternating
rounds, as wall time and as the server's CPU (from /proc), on a throwaway server
(scripts/neo4j) with an empty database that holds the schema.

    python scripts/bench_schema_step.py --rounds 3 --server-cpus 1 --client-cpus 0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

from mem0g.stores.neo4j import Neo4jGraphStore, indexes
from mem0g.stores.neo4j.schema_check import SchemaFound
from mem0g.testing.neo4j import start_maven_server

MODES = ("check", "ddl")


def server_cpu(home: Path) -> float:
    """CPU seconds the server process has used."""
    pid = int((home / "run" / "neo4j.pid").read_text().split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_once(uri: str, auth: tuple[str, str], dims: int, mode: str, home: Path) -> dict[str, Any]:
    """One store's schema step: its wall seconds, the server's CPU seconds meanwhile, gaps."""
    store = Neo4jGraphStore(uri, auth, dims=dims)
    try:
        before, began = server_cpu(home), time.perf_counter()
        if mode == "ddl":  # what every store ran before the check: the whole step
            forced = SchemaFound(gaps=["forced by the benchmark"])
            with mock.patch.object(indexes, "check_schema", return_value=forced):
                store._ready()
        else:
            store._ready()
        wall = time.perf_counter() - began
        cpu = server_cpu(home) - before
        return {"mode": mode, "wall_s": round(wall, 3), "server_cpu_s": round(cpu, 3),
                "gaps": list(store.schema_gaps)}  # fmt: skip
    finally:
        store.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="restarts per mode, alternating")
    p.add_argument("--dims", type=int, default=384)
    p.add_argument("--server-cpus", default=None, help="the server's CPUs, e.g. 1")
    p.add_argument("--client-cpus", default=None, help="this process's CPUs, e.g. 0")
    p.add_argument("--out", type=Path, default=Path("bench-results/schema-step.json"))
    args = p.parse_args()
    server = start_maven_server(cpus=args.server_cpus)
    if args.client_cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in args.client_cpus.split(",")})
    assert server.home is not None
    auth = (server.user, server.password)
    runs: list[dict[str, Any]] = []
    try:
        open_once(server.uri, auth, args.dims, "ddl", server.home)  # the schema, made once
        for round_ in range(args.rounds):
            for mode in MODES if round_ % 2 == 0 else MODES[::-1]:
                began = time.perf_counter()
                server.restart()
                restart_s = time.perf_counter() - began
                run = open_once(server.uri, auth, args.dims, mode, server.home)
                run.update(
                    round=round_,
                    restart_s=round(restart_s, 1),
                    load=[round(x, 2) for x in os.getloadavg()],
                )
                print(json.dumps(run), flush=True)
                runs.append(run)
    finally:
        server.stop()
    summary = {
        mode: {
            key: statistics.median(r[key] for r in runs if r["mode"] == mode)
            for key in ("wall_s", "server_cpu_s")
        }
        for mode in MODES
    }
    for mode, figures in summary.items():
        print(f"{mode}: median wall {figures['wall_s']:.3f} s, "
              f"server CPU {figures['server_cpu_s']:.3f} s")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "schema step at open", "date": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": " ".join(sys.argv), "runs": runs,
        "median": summary}, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
