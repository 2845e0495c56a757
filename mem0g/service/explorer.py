"""The graph explorer page: one self-contained HTML file (data, vis-network and the viewer
inline), written by `mem0g dump --format html` and served empty at `/ui`, where it asks for a
tenant and reads it from the API.

Safety with hostile names: the data travels as JSON inside a `<script type=
"application/json">` block with `<`, `>`, `&` and U+2028/9 escaped, so no name can close the
block; the viewer puts every text into the page through `textContent` (never as HTML), vis
draws labels on a canvas, and a Content-Security-Policy forbids loading anything from outside.
No import of FastAPI: `mem0g.export` uses this module too.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

from mem0g import export
from mem0g.types import Episode, Fact, GraphSnapshot, Relation, Tenant

VIS_VERSION = "10.1.5"
_STATIC = resources.files("mem0g.service") / "static"


@cache
def _template() -> str:
    page = (_STATIC / "explorer.html").read_text(encoding="utf-8")
    vis = (_STATIC / "vis-network" / "vis-network.min.js").read_text(encoding="utf-8")
    if "</script" in vis.lower():
        raise RuntimeError("the vendored vis-network cannot be inlined (it holds </script)")
    return page.replace("/*MEM0G_VIS*/", vis).replace("__MEM0G_VIS_VERSION__", VIS_VERSION)


def _script_json(data: object) -> str:
    """JSON that is inert inside a <script> element whatever the strings hold."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):  # fmt: skip
        text = text.replace(raw, escaped)
    return text


def episode_rows(snapshot: GraphSnapshot, episodes: Iterable[Episode]) -> list[dict[str, Any]]:
    """The episodes the snapshot's edges and facts point back to (no others: a dump of one
    edge does not carry a whole conversation), as the page shows them: what was said, by whom
    (role, name), when. The /ui page filters `GET /v1/episodes` the same way, in the browser."""
    cited: list[Relation | Fact] = [*snapshot.relations, *snapshot.facts]
    wanted = {p.episode_id for item in cited for p in item.provenance}
    rows = []
    for episode in episodes:
        if episode.id in wanted:
            wanted.discard(episode.id)  # each once (scopes overlap)
            rows.append(
                json.loads(episode.model_dump_json(include={"id", "timestamp", "messages"}))
            )
    return rows


def page(
    snapshot: GraphSnapshot | None,
    *,
    tenant: Tenant | None = None,
    episodes: Iterable[Episode] = (),
) -> str:
    """The page, with `snapshot` (and the messages of its episodes) inside (a file) or without
    (the service's /ui, which reads them from the API)."""
    data: dict[str, object] = {"snapshot": None, "tenant": None}
    title = "mem0g graph"
    if snapshot is not None:
        dump = json.loads(export.to_json(snapshot))  # the JSON dump: no embeddings
        data["snapshot"] = {k: dump[k] for k in ("entities", "relations", "facts")}
        data["snapshot"]["episodes"] = episode_rows(snapshot, episodes)  # type: ignore[index]
        if tenant is not None:
            data["tenant"] = tenant.model_dump()
            who = " ".join(f"{k}={v}" for k, v in tenant.model_dump().items() if v)
            title = f"mem0g graph: {who}"
    # split at the data placeholder first: neither the title nor the data (tenant ids, names:
    # any text, placeholders too) is ever searched for a placeholder
    head, tail = _template().split("__MEM0G_DATA__", 1)
    head = head.replace("__MEM0G_TITLE__", html.escape(title))
    return head + _script_json(data) + tail


def to_html(
    snapshot: GraphSnapshot, *, tenant: Tenant | None = None, episodes: Iterable[Episode] = ()
) -> str:
    """`mem0g dump --format html`: the explorer with this graph, openable offline; pass the
    scope's `episodes` (`Memory.episodes`) so edges show the messages they came from."""
    return page(snapshot, tenant=tenant, episodes=episodes)


def scope_episodes(memory: Any, tenant: Tenant | None) -> list[Episode]:
    """The episodes an html dump of `tenant` (None: every tenant) needs, read through
    `Memory.episodes` (the store contract's episode read)."""
    if tenant is not None:
        episodes: list[Episode] = memory.episodes(**tenant.model_dump())
        return episodes
    from mem0g.memory import covering_scopes

    found: dict[str, Episode] = {}
    for scope, exact in covering_scopes(memory.tenants()):  # a user's runs read once
        found.update((e.id, e) for e in memory.store.episodes(scope, exact=exact))
    return list(found.values())
