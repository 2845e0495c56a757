"""Lets the CLI's global options (--path, --config, --debug) come after the subcommand, and
the tenant options (--user/-u, --agent, --run) before it, by moving each to where click
expects it. A newcomer types `mem0g stats --path DIR` as often as `mem0g --path DIR stats`;
both mean the same. An option the subcommand declares itself (`demo --path`) stays its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# options of the root command that may also be written after the subcommand
GLOBAL_OPTIONS = ("--config", "-c", "--path", "--debug")
# options of most subcommands that may also be written before the subcommand
TENANT_OPTIONS = ("--user", "-u", "--agent", "--run")


def _option_names(command: Any) -> tuple[set[str], set[str]]:
    """(every option name of `command`, the names that take a value). Duck-typed: typer
    carries its own copy of click, whose classes are not the `click` package's."""
    names: set[str] = set()
    valued: set[str] = set()
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option":
            continue
        opts = {*param.opts, *param.secondary_opts}
        names |= opts
        if not (param.is_flag or param.count):
            valued |= set(param.opts)
    return names, valued


def _split(token: str) -> tuple[str, str | None]:
    """`--path=DIR` -> ("--path", "DIR"); anything else -> (token, None)."""
    if token.startswith("--") and "=" in token:
        name, value = token.split("=", 1)
        return name, value
    return token, None


def rearrange(root: Any, ctx: Any, args: Sequence[str]) -> list[str]:
    """`args` (after the program name) with global options moved before the subcommand and
    tenant options moved after it. Tokens after `--` are never touched."""
    args = list(args)
    root_names, root_valued = _option_names(root)
    head: list[str] = []
    tenant: list[str] = []
    tenant_names: set[str] = set()
    i = 0
    # the part before the subcommand: root options (kept) and tenant options (moved)
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        name, inline = _split(args[i])
        takes_value = name in TENANT_OPTIONS or name in root_valued
        is_tenant = name in TENANT_OPTIONS and name not in root_names
        group = tenant if is_tenant else head
        if is_tenant:
            tenant_names.add(name)
        group.append(args[i])
        if takes_value and inline is None and i + 1 < len(args):
            group.append(args[i + 1])
            i += 1
        i += 1
    if i >= len(args) or args[i] == "--":
        return args  # no subcommand: leave it all to click (help, --version, errors)
    name = args[i]
    command = root.get_command(ctx, name)
    if command is None:
        return args  # click says "No such command"
    body: list[str] = [name]
    i += 1
    moved: list[str] = []
    levels = [command]
    while i < len(args):
        token = args[i]
        if token == "--":
            body.extend(args[i:])
            break
        leaf = levels[-1]
        names, valued = _option_names(leaf)
        opt, inline = _split(token)
        if token.startswith("-") and opt in GLOBAL_OPTIONS and opt not in names:
            moved.append(token)
            if opt in root_valued and inline is None and i + 1 < len(args):
                moved.append(args[i + 1])
                i += 1
        elif token.startswith("-"):
            body.append(token)
            if opt in valued and inline is None and i + 1 < len(args):
                body.append(args[i + 1])
                i += 1
        else:
            body.append(token)
            if hasattr(leaf, "get_command"):  # a group: follow it to its subcommand
                sub = leaf.get_command(ctx, token)
                if sub is not None:
                    levels.append(sub)
        i += 1
    if tenant:
        leaf_names, _ = _option_names(levels[-1])
        if not tenant_names <= leaf_names:
            where = " ".join(t for t in body if not t.startswith("-"))
            ctx.fail(f"`{where}` takes no tenant option ({', '.join(sorted(tenant_names))})")
        cut = body.index("--") if "--" in body else len(body)
        body[cut:cut] = tenant
    return head + moved + body


def tidy_help(group: Any) -> None:
    """Reflow every command's help text: docstring line breaks are not sentence breaks, and
    typer's command list would keep them ("... when it was said in / the conversation").
    A long help is listed by its first sentence; `COMMAND --help` shows all of it."""
    for command in getattr(group, "commands", {}).values():
        if command.help:
            paragraphs = [" ".join(p.split()) for p in command.help.split("\n\n")]
            command.help = "\n\n".join(p for p in paragraphs if p)
            first = paragraphs[0]
            if len(first) > 100 and ". " in first and not command.short_help:
                command.short_help = first.split(". ", 1)[0] + "."
        tidy_help(command)
