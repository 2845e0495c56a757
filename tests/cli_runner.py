"""typer's CliRunner, with each app's click command built once per process.

typer builds the click command tree again on every `invoke` (typer.main.get_command reads
every command's signature and type hints): about 40 ms of CPU each, and the local tests alone
invoked the CLI 671 times (25.5 CPU s at load 13, 2026-12-03). A built command holds no state
of a run: each invoke parses its arguments into a new click context, and mem0g's one change to
the tree, tidy_help's reflowed help texts, gives the same text when applied again. A test that
needs the tree itself takes `command(app)`.
"""

from __future__ import annotations

import functools
from typing import Any
from unittest import mock

import typer
import typer.testing
from typer.main import get_command

command = functools.cache(get_command)


class CliRunner(typer.testing.CliRunner):
    def invoke(self, app: typer.Typer, *args: Any, **kwargs: Any) -> Any:
        # typer.testing looks its builder up by this module-level name on every invoke; a
        # typer that renamed it makes patch.object fail here, loudly, not run slower quietly
        with mock.patch.object(typer.testing, "_get_command", command):
            return super().invoke(app, *args, **kwargs)
