"""The `mem0g` command line: a thin typer layer over `Memory` and `mem0g.export`.

Data goes to stdout (tables, JSON, dumps); progress and errors go to stderr, so output can
be piped. Exit codes: 0 ok, 1 a failure while working (LLM, store, a failed check), 2 bad input,
which includes a fact id the tenant does not have (unknown, deleted, or another tenant's: the
CLI cannot tell them apart, by design of the tenant scope).

What lives here: `common.py` (the `app`, its error handling, the per-command state, shared
options and print/parse helpers), `args.py` (global and tenant options on either side of the
subcommand), `inputs.py` (the `add --file` format), `add.py`, `facts.py` (search and one fact
by id), `store.py` (dump, stats, reindex, doctor, demo, reset, delete), `entities.py` (the
`entities` sub-app), `archive.py` (export, import). Each command module registers its commands
on `common.app` when imported; this module imports them in the order `mem0g --help` lists
them, then the sub-apps of other rooms (`mem0g eval`, and `serve`/`mcp`/`keys` from
mem0g/service/cli.py).

Who may import it: the `mem0g` entry point (`mem0g.cli:app`), tests and scripts; the service
and eval CLIs use `common`'s helpers. It is a client of `Memory`, `export` and `archive`, never
of a store directly.
"""

from __future__ import annotations

# each module registers its commands on `app`: the import order is the order of --help
# isort: off
import mem0g.cli.add
import mem0g.cli.facts
import mem0g.cli.store
import mem0g.cli.archive
import mem0g.cli.entities  # noqa: F401

# isort: on
from mem0g.cli.common import InputError, app
from mem0g.cli.inputs import EpisodeInput, read_episodes

__all__ = ["EpisodeInput", "InputError", "app", "read_episodes"]

__import__("mem0g.service.cli", fromlist=["register"]).register(app)  # serve, mcp, keys
