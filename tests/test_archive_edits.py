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
from typer.testing import Result

from mem0g import Memory, archive
from mem0g.archive import ArchiveError
from mem0g.cli import app
from mem0g.embed import CachedEmbedder, HashingEmbedder
from mem0g.stores.archive_reads import fact_events
from mem0g.types import Summary, Tenant
from tests.cli_runner import CliRunner

ALICE = Tenant(user_id="alice")


def _memory(tmp_path: Path, name: str, hashing: Any) -> Memory:
    return Memory({"graph_store": {"path": str(tmp_path / name)}}, embedder=hashing)


def _export(m: Memory) -> str:
    out = io.StringIO()
    m.export(out)
    return out.getvalue()


def _facts(m: Memory) -> list[str]:
    return sorted(f.text for f in m.get_all(user_id="alice").facts)


def _history(m: Memory) -> list[tuple[str, str, str | None]]:
    return sorted((e.fact_id, e.event, e.new_text) for e in fact_events(m.store, ALICE))


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


@pytest.mark.parametrize("bad", ["x" * 300, "   "], ids=["too-long", "blank"])
def test_a_tenant_id_memory_refuses_is_refused_on_import(tmp_path, hashing, bad: str) -> None:
    """An archive (edited, or made under other limits) may name a tenant whose ids every
    Memory call refuses: imported, it could be neither read nor deleted by its ids, and a
    whole-store dump failed on it. Refused, with the tenants before it imported."""
    with _memory(tmp_path, "src", hashing) as source:
        for user in ("alice", "bob"):
            source.add(f"{user} likes tea", user_id=user, infer=False)
        lines = [json.loads(line) for line in _export(source).splitlines()]
    for line in lines:  # bob becomes `bad`, in his section's tenant, records and end
        for item in (line, line.get("record") or {}):
            if isinstance(item.get("tenant"), dict) and item["tenant"]["user_id"] == "bob":
                item["tenant"]["user_id"] = bad
    edited = "\n".join(json.dumps(line) for line in lines) + "\n"
    with _memory(tmp_path, "dst", hashing) as target:
        with pytest.raises(ArchiveError, match="user_id"):
            target.import_archive(io.StringIO(edited))
        assert target.tenants() == [ALICE]
        assert target.get_everything().facts == target.get_all(user_id="alice").facts


def test_merge_of_a_newer_archive_of_the_same_tenant(tmp_path, hashing) -> None:
    """Restore a backup, then merge a later one: a fact updated or deleted between the two
    exports is a fact the target has (its version stays, with its history); the facts new
    since are added with theirs. It was refused whole ("fact ... already exists"): the
    update's event made the kept fact look like a deleted one to recreate."""
    with _memory(tmp_path, "src", hashing) as source, _memory(tmp_path, "dst", hashing) as target:
        source.add("one", user_id="alice", infer=False)
        source.add("two", user_id="alice", infer=False)
        target.import_archive(io.StringIO(_export(source)))
        ids = {f.text: f.id for f in source.get_all(user_id="alice").facts}
        source.update(ids["one"], "one updated", user_id="alice")
        source.delete(ids["two"], user_id="alice")
        source.add("three", user_id="alice", infer=False)
        before = _history(target)
        (merged,) = target.import_archive(io.StringIO(_export(source)), merge=True)
        assert merged.merged and merged.counts["fact"] == 1
        assert _facts(target) == ["one", "three", "two"]
        three = next(f.id for f in source.get_all(user_id="alice").facts if f.text == "three")
        assert _history(target) == sorted([*before, (three, "ADD", "three")])


def test_merge_keeps_a_fact_the_target_deleted_deleted(tmp_path, hashing) -> None:
    with _memory(tmp_path, "src", hashing) as source, _memory(tmp_path, "dst", hashing) as target:
        source.add("one", user_id="alice", infer=False)
        backup = _export(source)
        target.import_archive(io.StringIO(backup))
        (fact,) = target.get_all(user_id="alice").facts
        target.delete(fact.id, user_id="alice")
        before = _history(target)
        target.import_archive(io.StringIO(backup), merge=True)
        assert _facts(target) == []
        assert _history(target) == before


def _cli(tmp_path: Path, *args: str) -> Result:
    env = {
        "MEM0G_HOME": str(tmp_path / "home"),
        "MEM0G_EMBEDDER__PROVIDER": "hashing",
        "MEM0G_GRAPH_STORE__PATH": None,
        "OPENAI_API_KEY": None,
        "OPENAI_BASE_URL": None,
    }
    return CliRunner(env=env).invoke(app, ["--path", str(tmp_path / "store"), *args])


def test_a_failed_export_keeps_the_file_it_would_replace(tmp_path, hashing, monkeypatch) -> None:
    with _memory(tmp_path, "store", hashing) as m:
        for user in ("alice", "bob"):
            m.add(f"{user} likes tea", user_id=user, infer=False)
    backup = tmp_path / "backup.jsonl"
    assert _cli(tmp_path, "export", "-o", str(backup)).exit_code == 0
    good = backup.read_text(encoding="utf-8")
    read = archive.read_tenant

    def failing(store: Any, tenant: Tenant, **kwargs: Any) -> Any:
        if tenant.user_id == "bob":  # the second tenant: the first one's lines are out
            raise OSError("disk full")
        return read(store, tenant, **kwargs)

    monkeypatch.setattr(archive, "read_tenant", failing)
    failed = _cli(tmp_path, "export", "-o", str(backup))
    assert failed.exit_code == 1 and "disk full" in failed.stderr
    assert backup.read_text(encoding="utf-8") == good
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == ["backup.jsonl"]
    with pytest.raises(OSError, match="disk full"):
        m = _memory(tmp_path, "store", hashing)
        with m:
            m.export(backup)
    assert backup.read_text(encoding="utf-8") == good


def test_import_re_embeds_vectors_of_another_size_under_the_same_model_name(tmp_path) -> None:
    """OpenAI's text-embedding-3-* take `dims`: the same model name at 1536 and at 512
    dimensions. An archive of the other size was imported as is and refused whole by the
    store ("embeddings of different sizes"): it must be re-embedded, like another model's."""

    def embedder(dims: int) -> CachedEmbedder:
        inner = HashingEmbedder(dims)
        inner.name = "text-embedding-3-small"  # a stand-in: OpenAI's names omit the size
        return CachedEmbedder(inner)

    with Memory({"graph_store": {"path": str(tmp_path / "src")}}, embedder=embedder(64)) as m:
        m.add("alice likes tea", user_id="alice", infer=False)
        backup = _export(m)
    small = embedder(32)
    with Memory({"graph_store": {"path": str(tmp_path / "dst")}}, embedder=small) as target:
        (imported,) = target.import_archive(io.StringIO(backup))
        assert imported.reembedded
        (fact,) = target.store.facts(ALICE)
        assert fact.embedding == pytest.approx(small.embed([fact.text])[0].tolist(), abs=1e-6)
