"""Races of `Memory`'s lifecycle: a delete against a summary refresh in flight, a close
against an add in flight (interleavings forced with events, no sleeps to win a race)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

pytestmark = pytest.mark.parametrize("store_kind", ["embedded"])

SUMMARY_ON = {"facts": True, "graph": False, "summary": True, "summary_every": 1}


def test_a_refresh_queued_during_delete_all_writes_no_summary_of_the_deleted_data(
    make_memory: Any, llm_server: Any, hashing: Any
) -> None:
    """A refresh that an add of another thread queues just after `delete_all` waited for the
    idle worker reads the messages, then the delete runs, then the user comes back with as
    many new messages: the refresh must not store its summary of the deleted ones."""
    reading = threading.Event()
    release = threading.Event()

    def summarize(payload: dict[str, Any]) -> dict[str, Any]:
        reading.set()
        assert release.wait(10)
        return {"summary": " / ".join(m["content"] for m in payload["messages"])}

    llm_server.add_rule({"task": "summarize", "response": summarize})
    m = make_memory(memory=SUMMARY_ON, embedder=hashing)
    m.add(_said("my card is 4111", "my PIN is 1234"), user_id="u", infer=False)
    idle = m.summaries.wait_idle

    def wait_idle() -> None:  # another thread's add queues its refresh right after
        idle()
        m.refresh_summary(user_id="u", wait=False)
        assert reading.wait(10)

    m.summaries.wait_idle = wait_idle
    m.delete_all(user_id="u")
    m.summaries.wait_idle = idle
    m.add(_said("hello again", "nice weather"), user_id="u", infer=False)
    release.set()
    m.summaries.wait_idle()
    summary = m.summary(user_id="u")
    assert summary is None or "4111" not in summary.text, summary


def test_an_add_that_close_overtakes_reports_what_it_wrote(
    make_memory: Any, llm_server: Any, hashing: Any
) -> None:
    """`close()` while an add is between its commit and its summary check: the add was
    written, so it must not raise (a caller told "failed" retries, and stores it twice)."""
    llm_server.add_rule({"task": "extract_facts", "response": {"facts": ["Likes tea"]}})
    llm_server.add_rule({"task": "summarize", "response": {"summary": "s"}})
    m = make_memory(memory={**SUMMARY_ON, "summary_every": 100}, embedder=hashing)
    path = m.config.graph_store.path
    written, closed = threading.Event(), threading.Event()
    apply = m.store.apply

    def apply_then_pause(plan: Any) -> None:
        apply(plan)
        written.set()
        assert closed.wait(10)

    m.store.apply = apply_then_pause
    outcome: list[Any] = []
    adder = threading.Thread(
        target=lambda: outcome.append(_attempt(lambda: m.add("I like tea", user_id="u")))
    )
    adder.start()
    assert written.wait(10)
    closer = threading.Thread(target=m.close)
    closer.start()
    closer.join(2)  # close may wait for the add in flight (it must not wait forever)
    closed.set()
    adder.join(10)
    closer.join(10)
    assert not closer.is_alive()
    reopened = make_memory(memory=SUMMARY_ON, embedder=hashing, path=path)
    assert [f.text for f in reopened.get_all(user_id="u").facts] == ["Likes tea"]
    assert not isinstance(outcome[0], Exception), outcome[0]


def _attempt(call: Any) -> Any:
    try:
        return call()
    except Exception as error:
        return error


def _said(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": t} for t in texts]


def test_refresh_summary_after_close_says_the_store_is_closed(
    make_memory: Any, hashing: Any
) -> None:
    """As every other call after `close()` does (it was the executor's RuntimeError)."""
    from mem0g.stores.base import StoreError

    m = make_memory(memory=SUMMARY_ON, embedder=hashing)
    m.close()
    with pytest.raises(StoreError, match="closed"):
        m.refresh_summary(user_id="u")
