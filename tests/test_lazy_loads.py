"""What a first search would load on its own time is loaded when `Memory` opens, once per
process, on a daemon thread that closing never waits for."""

from __future__ import annotations

from pathlib import Path

import mem0g.memory
from mem0g import Memory, retrieve
from mem0g.stores.lexical_query import verb_forms


def test_memory_starts_the_lazy_loads_when_it_opens(tmp_path: Path, hashing, monkeypatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(mem0g.memory, "load_in_background", lambda: calls.append(1))
    m = Memory({"graph_store": {"provider": "embedded", "path": str(tmp_path)}}, embedder=hashing)
    m.close()
    assert calls == [1]


def test_the_lazy_loads_run_once_per_process_on_a_daemon_thread() -> None:
    thread = retrieve.load_in_background()
    assert thread.daemon and thread.name == "mem0g-load"
    assert retrieve.load_in_background() is thread
    assert [thread] == retrieve._LOADING
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert verb_forms.cache_info().currsize >= 1  # lemminflect's dictionaries were read
