"""Archive import of edited or newer archives, and export over an existing file (review of
mem0g/archive.py): a refused tenant leaves nothing of itself, a merge of a newer archive of
the same tenant adds what is new, and a failed export keeps the file it would replace. The
hashing embedder throughout; no LLM is called (facts are added with infer=False)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from mem0g import Memory
from mem0g.archive import ArchiveError
from mem0g.types import Summary, Tenant

ALICE = Tenant(user_id="alice")


def _memory(tmp_path: Path, name: str, hashing: Any) -> Memory:
    return Memory({"graph_store": {"path": str(tmp_path / name)}}, embedder=hashing)


def _export(m: Memory) -> str:
    out = io.StringIO()
    m.export(out)
    return out.getvalue()


def test_a_bad_summary_refuses_its_tenant_whole(tmp_path, hashing) -> None:
    """The summary is written after the tenant's transaction: one the store refuses must be
    refused before it, or the tenant is half imported (its records, no summary) and a second
    try is refused as "already has data"."""
    with _memory(tmp_path, "src", hashing) as source:
        source.add("alice likes tea", user_id="alice", infer=False)
        source.store.set_summary(Summary(tenant=ALICE, text="likes tea", messages_covered=1))
        lines = [json.loads(line) for line in _export(source).splitlines()]
    for line in lines:
        if line["kind"] == "summary":
            line["record"]["messages_covered"] = -1
    edited = "\n".join(json.dumps(line) for line in lines) + "\n"
    with _memory(tmp_path, "dst", hashing) as target:
        with pytest.raises(ArchiveError, match="summary"):
            target.import_archive(io.StringIO(edited))
        assert target.tenants() == []
