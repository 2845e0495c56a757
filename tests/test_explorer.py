"""The graph explorer page (`mem0g dump --format html`, `/ui`) in headless Chromium (Debian's
`chromium`, which `make test` installs when absent, driven by Playwright; one browser for the
module, a fresh context per page): it loads with no console errors, the expected entities and
edges are in the DOM, hostile names and message texts stay text, the time view (as of a date)
and the entity timeline show the right edges, provenance shows what was said, and typing into
the search box and dragging the slider's thumb work as real input events."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from cli_runner import CliRunner
from service_support import live_server, service_memory

from mem0g.cli import app as cli
from mem0g.service import explorer
from mem0g.service.app import create_app
from mem0g.service.explorer import to_html
from mem0g.testing.script import turn
from mem0g.types import Entity, GraphSnapshot, Tenant

SCRIPT = "<script>alert('x')</script>"
IMG = "<img src=x onerror=\"document.title='pwned'\">"
RULES = [
    *turn("moved to Paris", [("Alice", "person"), ("Paris", "city")],
          [("Alice", "lives_in", "Paris")], facts=["Alice moved to Paris"]),
    *turn("moved to Berlin", [("Alice", "person"), ("Berlin", "city")],
          [("Alice", "lives_in", "Berlin")], [("INVALIDATE", 0, "e1")],
          facts=["Alice moved to Berlin"]),
    *turn("hostile", [(SCRIPT, "person"), (IMG, "pet")], [(SCRIPT, "owns", IMG)], facts=[]),
    {"task": "resolve_updates", "response": {"operations": []}},
    {"task": "update_memory", "response": {"operations": []}},
]  # fmt: skip


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:  # a failure, never a skip: CI installs it (Makefile: browser)
        pytest.fail("headless Chromium is needed: apt-get install -y chromium (make browser)")
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium (the system's, driven by Playwright) for the module: each check
    opens a fresh page (its own context: no shared storage) instead of a new browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=_chromium_executable(),
                                      args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
        yield launched
        launched.close()


@pytest.fixture
def render(browser) -> Iterator[Callable[..., tuple[str, list[str]]]]:
    """`render(url, state="ready")`: the DOM once the page reached `state` (its body's
    data-state), and every console message and page error it produced on the way."""
    contexts: list[Any] = []

    def load(url: str, state: str = "ready") -> tuple[str, list[str]]:
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        contexts.append(context)
        page = context.new_page()
        console: list[str] = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: console.append(f"error: {e}"))
        page.goto(url)
        page.wait_for_selector(f"body[data-state={state}]", state="attached")
        return page.content(), console

    yield load
    for context in contexts:
        context.close()


class _Items(HTMLParser):
    """The entity and edge list items, with their attributes and text."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[dict[str, Any]] = []
        self.body: dict[str, str] = {}
        self.title = ""
        self._open: dict[str, Any] | None = None
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        if tag == "body":
            self.body = attributes
        if tag == "title":
            self._in_title = True
        if tag == "li":
            self._open = {**attributes, "text": ""}
            self.items.append(self._open)
        if tag in ("script", "img", "iframe"):
            self.items.append({"tag": tag, **attributes})

    def handle_endtag(self, tag: str) -> None:
        if tag == "li":
            self._open = None
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open["text"] += data
        if self._in_title:
            self.title += data


@pytest.fixture
def alice(tmp_path, llm_server, hashing) -> Any:
    for rule in RULES:
        llm_server.add_rule(rule)
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("I moved to Paris", user_id="alice", timestamp="2023-01-10T10:00:00Z")
    memory.add("I moved to Berlin", user_id="alice", timestamp="2023-06-10T10:00:00Z")
    hostile = [{"role": "user", "name": SCRIPT, "content": f"hostile names {IMG}\nsecond line"}]
    memory.add(hostile, user_id="alice", timestamp="2023-07-01T10:00:00Z")
    yield memory
    memory.close()


def _parse(dom: str) -> _Items:
    items = _Items()
    items.feed(dom)
    return items


def test_dumped_page_in_headless_chromium(alice, tmp_path, render) -> None:
    page = tmp_path / "graph.html"
    page.write_text(to_html(alice.get_all(user_id="alice", include_invalid=True),
                            tenant=Tenant(user_id="alice")))  # fmt: skip
    dom, console = render(f"{page.as_uri()}#ended=1")
    assert console == []
    parsed = _parse(dom)
    assert parsed.body.get("data-state") == "ready" and "pwned" not in parsed.title
    assert re.search(r'<div id="errors"></div>', dom)
    entities = {i["text"]: i for i in parsed.items if "data-entity-id" in i}
    assert set(entities) == {"Alice (person)", "Paris (city)", "Berlin (city)",
                             f"{SCRIPT} (person)", f"{IMG} (pet)"}  # fmt: skip
    edges = {i["text"].split("  [")[0]: i for i in parsed.items if "data-relation-id" in i}
    assert edges["Alice —lives_in→ Paris"]["data-ended"] == "true"
    assert edges["Alice —lives_in→ Berlin"]["data-ended"] == "false"
    assert all(i["data-visible"] == "true" for i in edges.values())  # ended ones shown
    # hostile names are text: no element came from them
    assert [i for i in parsed.items if i.get("tag") == "img"] == []
    assert all("alert" not in i.get("src", "") for i in parsed.items if i.get("tag") == "script")


def test_time_view_and_entity_timeline(alice, tmp_path, render) -> None:
    page = tmp_path / "graph.html"
    page.write_text(to_html(alice.get_all(user_id="alice", include_invalid=True)))
    alice_id = next(e.id for e in alice.list_entities(user_id="alice") if e.name == "Alice")
    dom, console = render(f"{page.as_uri()}#asof=2023-03-01&entity={alice_id}")
    assert console == []
    edges = {i["text"].split("  [")[0]: i["data-visible"] for i in _parse(dom).items
             if "data-relation-id" in i and "data-ended" in i}  # fmt: skip
    assert edges["Alice —lives_in→ Paris"] == "true"  # valid on 2023-03-01
    assert edges["Alice —lives_in→ Berlin"] == "false"  # not yet
    timeline = re.search(r'<ul id="timeline">(.*?)</ul>', dom, re.S)
    assert timeline is not None
    lines = re.findall(r"<li[^>]*>([^<]*)</li>", timeline.group(1))
    assert lines == ["2023-01-10 → 2023-06-10: Alice lives_in Paris",
                     "2023-06-10 → …: Alice lives_in Berlin"]  # fmt: skip
    dom, _ = render(f"{page.as_uri()}")  # default: current edges only
    hidden = {i["text"].split("  [")[0]: i["data-visible"] for i in _parse(dom).items
              if "data-ended" in i}  # fmt: skip
    assert hidden["Alice —lives_in→ Paris"] == "false"


def test_ui_is_served_and_loads_a_tenant_from_the_api(alice, tmp_path, render) -> None:
    snapshot = alice.get_all(user_id="alice", include_invalid=True)
    berlin = next(r for r in snapshot.relations if r.destination == "Berlin")
    fact = next(f for f in snapshot.facts if f.text == "Alice moved to Berlin")
    with live_server(create_app(alice)) as base:
        dom, console = render(f"{base}/ui", state="login")
        assert console == []
        assert _parse(dom).body.get("data-state") == "login"
        dom, console = render(f"{base}/ui#user_id=alice&ended=1")
        assert console == []
        parsed = _parse(dom)
        assert parsed.body.get("data-state") == "ready"
        names = {i["text"] for i in parsed.items if "data-entity-id" in i}
        assert {"Alice (person)", "Paris (city)", "Berlin (city)", f"{SCRIPT} (person)"} <= names
        # provenance text through the API (GET /v1/episodes), for an edge and for a fact
        dom, console = render(f"{base}/ui#user_id=alice&edge={berlin.id}")
        assert console == []
        assert _said(_details(dom)) == ["|user alice|| · 2023-06-10 10:00:00||I moved to Berlin|"]
        dom, console = render(f"{base}/ui#user_id=alice&fact={fact.id}")
        assert console == []
        assert "Alice moved to Berlin" in _details(dom)
        assert _said(_details(dom)) == ["|user alice|| · 2023-06-10 10:00:00||I moved to Berlin|"]


def _details(dom: str) -> str:
    details = re.search(r'<div id="details"[^>]*>(.*?)</div>\s*<h2>', dom, re.S)
    assert details is not None
    return details.group(1)


def _said(details: str) -> list[str]:
    """The provenance's message lines: who, when and what (tags as "|")."""
    return [re.sub(r"<[^>]+>", "|", m) for m in
            re.findall(r'<div class="said"[^>]*>(.*?</div>)</div>', details, re.S)]  # fmt: skip


def test_edge_details_show_validity_provenance_and_mentions(alice, tmp_path, render) -> None:
    snapshot = alice.get_all(user_id="alice", include_invalid=True)
    paris = next(r for r in snapshot.relations if r.destination == "Paris")
    page = tmp_path / "graph.html"
    page.write_text(to_html(snapshot, episodes=alice.episodes(user_id="alice")))
    dom, console = render(f"{page.as_uri()}#edge={paris.id}")
    assert console == []
    details = _details(dom)
    text = re.sub(r"<[^>]+>", "|", details)
    assert "Alice lives_in Paris" in text
    assert "valid: 2023-01-10 → 2023-06-10" in text
    assert "mentions: 1" in text
    assert f"episode {paris.provenance[0].episode_id} at 2023-01-10 10:00:00" in text
    # what was said in that episode, by whom, when (the message, not only its facts)
    assert _said(details) == ["|user alice|| · 2023-01-10 10:00:00||I moved to Paris|"]
    assert "fact: “Alice moved to Paris”" in text
    assert "Berlin" not in text  # another episode's message is not this edge's provenance


def test_hostile_message_text_in_provenance_stays_text(alice, tmp_path, render) -> None:
    snapshot = alice.get_all(user_id="alice", include_invalid=True)
    owns = next(r for r in snapshot.relations if r.relation == "owns")
    page = tmp_path / "graph.html"
    page.write_text(to_html(snapshot, episodes=alice.episodes(user_id="alice")))
    block = page.read_text().split('id="mem0g-data">')[1].split("</script>")[0]
    assert "<img" not in block and "\\u003cimg src=x onerror" in block  # inert in the file
    dom, console = render(f"{page.as_uri()}#edge={owns.id}")
    assert console == []
    parsed = _parse(dom)
    assert "pwned" not in parsed.title
    assert [i for i in parsed.items if i.get("tag") in ("img", "iframe")] == []
    [line] = _said(_details(dom))
    # the DOM dump escapes the text again: the name and the message are inert text nodes
    assert line.startswith("|user &lt;script&gt;alert('x')&lt;/script&gt;|| · 2023-07-01")
    assert "hostile names &lt;img src=x onerror=\"document.title='pwned'\"&gt;\nsecond line" in line


def test_dump_without_episodes_says_so(alice, tmp_path, render) -> None:
    snapshot = alice.get_all(user_id="alice", include_invalid=True)
    paris = next(r for r in snapshot.relations if r.destination == "Paris")
    page = tmp_path / "graph.html"
    page.write_text(to_html(snapshot))  # an old caller: no episodes given
    dom, console = render(f"{page.as_uri()}#edge={paris.id}")
    assert console == [] and "(its messages are not in this view)" in _details(dom)


def test_dump_format_html_from_the_cli(alice, tmp_path) -> None:
    path = alice.config.graph_store.path
    alice.close()
    out = tmp_path / "alice.html"
    result = CliRunner().invoke(cli, ["--path", str(path), "dump", "--format", "html",
                                      "-u", "alice", "-o", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "vis-network" in text and "user_id=alice" in text
    assert SCRIPT not in text and "\\u003cscript\\u003e" in text  # the data block is inert
    assert "I moved to Paris" in text and "I moved to Berlin" in text  # the episodes' messages


def _chromium_executable() -> str:
    """The browser binary itself: Debian's /usr/bin/chromium is a shell wrapper, which
    Playwright cannot drive (it talks to the binary over a pipe)."""
    found = Path(_chromium()).resolve()
    if found.read_bytes()[:2] == b"#!":
        for real in (
            Path("/usr/lib/chromium/chromium"),
            Path("/usr/lib/chromium-browser/chromium"),
        ):
            if real.exists():
                return str(real)
    return str(found)


def test_typing_in_search_and_dragging_the_as_of_slider(alice, tmp_path, browser) -> None:
    """Real input events (Playwright driving the system's Chromium): keys typed into the
    search box, the slider's thumb dragged with the mouse."""
    page_file = tmp_path / "graph.html"
    page_file.write_text(to_html(alice.get_all(user_id="alice", include_invalid=True)))
    problems: list[str] = []
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    try:
        page = context.new_page()
        page.on("console", lambda m: problems.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"error: {e}"))
        page.goto(f"{page_file.as_uri()}#ended=1")
        page.wait_for_selector("body[data-state=ready]")

        def shown(kind: str) -> list[str]:
            return page.locator(f"#{kind} li[data-visible=true]").all_inner_texts()

        assert len(shown("entities")) == 5
        page.locator("#search").press_sequentially("berl", delay=20)
        assert shown("entities") == ["Berlin (city)"]
        assert page.locator("#entity-count").inner_text() == "1 / 5"
        page.locator("#search").press("Control+a")
        page.locator("#search").press("Backspace")
        assert len(shown("entities")) == 5

        def edges() -> dict[str, bool]:
            rows = page.locator("#relations li").evaluate_all(
                "els => els.map(e => [e.textContent.split('  [')[0], e.dataset.visible])"
            )
            return {text: visible == "true" for text, visible in rows}

        slider = page.locator("#asof")
        box = slider.bounding_box()
        assert box is not None
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] - 4, y)  # the thumb starts at "now"
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.2, y, steps=8)
        page.mouse.up()
        label = page.locator("#asof-label").inner_text()
        assert "2023-01-10" <= label < "2023-06-10", label  # Paris time: before Berlin
        assert edges()["Alice —lives_in→ Paris"] and not edges()["Alice —lives_in→ Berlin"]
        page.mouse.move(box["x"] + box["width"] * 0.2, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] + 20, y, steps=8)  # back to the end: now
        page.mouse.up()
        assert page.locator("#asof-label").inner_text() == "now"
        assert all(edges().values())  # ended edges are shown (the toggle is on)
        page.locator("#ended").click()  # and the toggle, clicked off, hides them
        assert not edges()["Alice —lives_in→ Paris"] and edges()["Alice —lives_in→ Berlin"]
    finally:
        context.close()
    assert problems == []


def test_placeholder_names_in_a_tenant_id_stay_in_the_title() -> None:
    """The title (a tenant id, any text) went in before the page was split at the data
    placeholder: a user_id holding `__MEM0G_DATA__` put the data into the <title> and left
    the data block holding the bare placeholder, which the viewer could not parse."""
    tenant = Tenant(user_id="x__MEM0G_DATA__ __MEM0G_TITLE__ y")
    snapshot = GraphSnapshot(entities=[Entity(tenant=tenant, name="Alice")])
    text = explorer.page(snapshot, tenant=tenant)
    block = re.search(r'<script type="application/json" id="mem0g-data">(.*?)</script>', text)
    assert block is not None
    data = json.loads(block.group(1))
    assert [e["name"] for e in data["snapshot"]["entities"]] == ["Alice"]
    assert data["tenant"]["user_id"] == tenant.user_id
    assert _parse(text).title == f"mem0g graph: user_id={tenant.user_id}"
