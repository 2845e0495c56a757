"""Screenshot of the Neo4j Browser showing the demo graph: docs/img/neo4j-browser-graph.png.

    .venv/bin/python scripts/browser_screenshot.py                 # own server, then stopped
    .venv/bin/python scripts/browser_screenshot.py --uri bolt://127.0.0.1:7687 \
        --http-url http://127.0.0.1:7474                            # reuse a running server
                                                                    # (password: $NEO4J_PASSWORD)

1. Neo4j: without --uri, a Neo4j 5.26 Community server is started with `scripts/neo4j start`
   in a temporary home on free loopback ports with a generated password, and stopped at the
   end with `scripts/neo4j stop` (which acts on the pid in the home's pid file).
2. Data: the bundled demo conversation (mem0g/demo/sample.json, user_id 'maya') is added
   session by session through `Memory` with a Neo4j graph store. SCRIPTED MODE: the LLM is the
   scripted TEST DOUBLE server (mem0g.testing.ScriptedLLMServer with mem0g/demo/script.json),
   not a live model; the embeddings are the real local MiniLM. The screenshot says so too.
   With --uri, a server that already holds data for 'maya' is used as it is.
3. Browser: headless Chromium (/usr/bin/chromium, Debian package `chromium`) is driven over
   the Chrome DevTools Protocol on a pipe (--remote-debugging-pipe; only the Python standard
   library, no Playwright). It opens the Neo4j Browser served by the server, logs in with the
   connect form, switches off "Connect result nodes" (`:config autoComplete: false`), captions
   edges with their relation (`:style`), pastes the `:param` lines of
   cypher/browser/tenant-graph.cypher into the editor and runs them, then its query, and saves
   a PNG of the full-screen result with the scripted-mode label in a strip below it. Page
   requests to anything but 127.0.0.1 are refused (and listed).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import html
import json
import os
import queue
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
NEO4J_SCRIPT = ROOT / "scripts" / "neo4j"
QUERY_FILE = ROOT / "cypher" / "browser" / "tenant-graph.cypher"
DEFAULT_OUT = ROOT / "docs" / "img" / "neo4j-browser-graph.png"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Shown on the screenshot: the graph was extracted by the scripted test double.
LABEL = (
    "mem0g demo conversation (mem0g/demo/sample.json, user_id 'maya'), extracted in SCRIPTED "
    "MODE: the LLM was the scripted test double (mem0g/demo/script.json), not a live model. "
    "Made by scripts/browser_screenshot.py"
)


def say(message: str) -> None:
    print(message, flush=True)


# ---------------------------------------------------------------- the Neo4j server


@dataclass
class Server:
    uri: str
    http_url: str
    user: str
    password: str = field(repr=False)
    home: Path | None = None  # set when this script started it

    def stop(self) -> None:
        if self.home is None:
            return
        home, self.home = self.home, None
        try:
            out = _neo4j_script("stop", "--home", str(home), env=os.environ.copy())
            say(out)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _neo4j_script(*args: str, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, str(NEO4J_SCRIPT), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/neo4j {args[0]} failed (exit {proc.returncode}):\n{output}")
    return output


def start_server() -> Server:
    """scripts/neo4j start in a temporary home, free loopback ports, a generated password."""
    home = Path(tempfile.mkdtemp(prefix="mem0g-browser-neo4j-"))
    password = secrets.token_hex(16)
    env = dict(os.environ, NEO4J_PASSWORD=password)  # never on a command line
    for attempt in range(3):  # a free port can be taken between choosing and binding it
        bolt, http = _free_port(), _free_port()
        if bolt == http:
            continue
        try:
            out = _neo4j_script(
                "start",
                "--home",
                str(home),
                "--bolt-port",
                str(bolt),
                "--http-port",
                str(http),
                env=env,
            )
        except RuntimeError as exc:
            if "already in use" in str(exc) and attempt < 2:
                continue
            shutil.rmtree(home, ignore_errors=True)
            raise
        say(out)
        return Server(
            uri=f"bolt://127.0.0.1:{bolt}",
            http_url=f"http://127.0.0.1:{http}",
            user="neo4j",
            password=password,
            home=home,
        )
    shutil.rmtree(home, ignore_errors=True)
    raise RuntimeError("could not find two free ports for Neo4j")


# ---------------------------------------------------------------- the demo data


def load_demo(server: Server) -> None:
    """The demo's five sessions through Memory on Neo4j, with the demo's own configuration
    (so the scripted answers match), LLM = the scripted TEST DOUBLE server."""
    from mem0g import demo
    from mem0g.config import (
        EmbedderConfig,
        FactsConfig,
        GraphStoreConfig,
        LLMConfig,
        MemoryConfig,
        MemorySection,
        ResolverConfig,
        RetrievalConfig,
    )
    from mem0g.embed import make_embedder
    from mem0g.llm.client import LLMClient
    from mem0g.memory import Memory
    from mem0g.testing.server import ScriptedLLMServer

    graph_store = GraphStoreConfig(
        provider="neo4j", url=server.uri, username=server.user, password=server.password
    )
    with ScriptedLLMServer.from_file(demo.SCRIPT_PATH) as llm_server:
        config = MemoryConfig(
            llm=LLMConfig(base_url=llm_server.base_url, api_key="scripted"),
            embedder=EmbedderConfig(),
            graph_store=graph_store,
            resolver=ResolverConfig(),
            retrieval=RetrievalConfig(),
            memory=MemorySection(summary=False),
            facts=FactsConfig(),
        )
        embedder = make_embedder(config.embedder)
        with Memory(config, llm=LLMClient(config.llm), embedder=embedder) as memory:
            stats = memory.stats(user_id=demo.USER_ID)
            if stats.entities or stats.episodes:
                say(
                    f"The server already holds a memory for user_id {demo.USER_ID!r} "
                    f"({stats.entities} entities, {stats.relations} edges): not loading the demo "
                    "again, using what is there."
                )
                return
            say(
                "SCRIPTED MODE: loading the demo conversation with the scripted TEST DOUBLE "
                f"standing in for the LLM API ({llm_server.base_url}, {demo.SCRIPT_PATH.name}), "
                "not a live model."
            )
            for number, session in enumerate(demo.load_sessions(), 1):
                result = memory.add(
                    session["messages"], user_id=demo.USER_ID, timestamp=session["timestamp"]
                )
                changes = ", ".join(
                    f"{c.event.value} {c.source} {c.relation} {c.destination}"
                    for c in result.relations
                )
                say(f"  session {number} ({session['timestamp'][:10]}): {changes or 'nothing'}")
            stats = memory.stats(user_id=demo.USER_ID)
            say(
                f"  loaded: {stats.entities} entities, {stats.relations} edges "
                f"({stats.invalid_relations} ended), {stats.episodes} episodes"
            )
        if llm_server.unmatched:
            raise RuntimeError(
                f"the scripted test double had no answer for {len(llm_server.unmatched)} "
                "request(s): the demo script and this loader disagree"
            )


# ---------------------------------------------------------------- Chrome DevTools Protocol


class DevToolsError(RuntimeError):
    pass


class Chromium:
    """Headless Chromium driven over --remote-debugging-pipe: the browser reads commands on
    its fd 3 and writes answers and events on its fd 4, each a JSON text ending in NUL."""

    def __init__(self, executable: str, width: int, height: int) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="mem0g-chromium-"))
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds() -> None:  # in the child, before exec: our pipe ends become fds 3 and 4
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.close(a)
            os.close(b)

        args = [
            executable,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={self.profile}",
            f"--window-size={width},{height}",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            # browser-internal lookups of any host but loopback fail without leaving the machine
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        self.log = (self.profile.parent / f"{self.profile.name}.log").open("w+b")
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            preexec_fn=child_fds,  # only moves two fds: no locks, no imports
            close_fds=False,  # our other fds are non-inheritable (PEP 446) anyway
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._pending: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._handlers: dict[str, list[Callable[[dict[str, Any]], None]]] = {}
        self.blocked: list[str] = []
        self._reader = threading.Thread(target=self._read, name="cdp-reader", daemon=True)
        self._reader.start()
        self.session = ""

    # -- transport

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                for waiting in list(self._pending.values()):
                    waiting.put({"error": {"message": "Chromium closed the pipe"}})
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    waiting = self._pending.pop(message["id"], None)
                    if waiting is not None:
                        waiting.put(message)
                else:
                    for handler in self._handlers.get(message.get("method", ""), []):
                        try:
                            handler(message)
                        except Exception as exc:  # a handler must not kill the reader
                            say(f"  (event handler failed: {exc!r})")

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        wait: bool = True,
        timeout: float = 60,
        browser_level: bool = False,
    ) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            message: dict[str, Any] = {
                "id": self._next_id,
                "method": method,
                "params": params or {},
            }
            if self.session and not browser_level:
                message["sessionId"] = self.session
            answer: queue.Queue[dict[str, Any]] = queue.Queue()
            if wait:
                self._pending[self._next_id] = answer
            os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        if not wait:
            return {}
        try:
            reply = answer.get(timeout=timeout)
        except queue.Empty:
            raise DevToolsError(f"{method}: no answer within {timeout} s") from None
        if "error" in reply:
            raise DevToolsError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def on(self, method: str, handler: Callable[[dict[str, Any]], None]) -> None:
        self._handlers.setdefault(method, []).append(handler)

    # -- page

    def open_page(self, width: int, height: int) -> None:
        """Attach to the first page and keep its requests on loopback."""
        targets = self.send("Target.getTargets", browser_level=True)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send(
            "Target.attachToTarget",
            {"targetId": page["targetId"], "flatten": True},
            browser_level=True,
        )["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.on("Fetch.requestPaused", self._only_loopback)
        self.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]})

    def _only_loopback(self, event: dict[str, Any]) -> None:
        params = event["params"]
        host = urlsplit(params["request"]["url"]).hostname or ""
        if host in ("127.0.0.1", "localhost") or params["request"]["url"].startswith("data:"):
            self.send("Fetch.continueRequest", {"requestId": params["requestId"]}, wait=False)
        else:
            self.blocked.append(params["request"]["url"])
            self.send(
                "Fetch.failRequest",
                {"requestId": params["requestId"], "errorReason": "BlockedByClient"},
                wait=False,
            )

    def navigate(self, url: str) -> None:
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise DevToolsError(f"navigating to {url}: {result['errorText']}")

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise DevToolsError(f"page script failed: {text}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, what: str, timeout: float = 60) -> Any:
        """Poll a page expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        probe = f"(() => {{ const v = ({expression}); return v && v.nodeType ? true : v; }})()"
        while True:
            value = self.evaluate(probe)
            if value:
                return value
            if time.monotonic() > deadline:
                raise DevToolsError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(0.25)

    def insert_text(self, text: str) -> None:
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close", timeout=10, browser_level=True)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # our own child, by its Popen handle
            self.proc.wait(timeout=15)
        self._reader.join(timeout=10)  # it ends at the end of the pipe
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
        Path(self.log.name).unlink(missing_ok=True)


# ---------------------------------------------------------------- the Neo4j Browser

# Bigger nodes and captions than the Browser's defaults, so the PNG reads well in the docs.
SCREENSHOT_STYLE = (
    ":style node.Entity {diameter: '60px'; color: '#68BDF6'; border-color: '#5CA8DB'; "
    "text-color-internal: '#FFFFFF'; font-size: '11px'; caption: '{name}'} "
    "relationship.RELATES {caption: '{name}'; font-size: '10px'; color: '#A5ABB6'; "
    "shaft-width: '2px'}"
)

# Paste `text` into the Browser's editor (Monaco) as a user's paste would, then press Run.
_PASTE_AND_RUN = """(() => {
  const area = document.querySelector('[data-testid=activeEditor] textarea')
            || document.querySelector('.monaco-editor textarea');
  if (!area) return 'no editor';
  area.focus();
  const data = new DataTransfer();
  data.setData('text/plain', %s);
  area.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true,
                                                  cancelable: true}));
  document.querySelector('[data-testid=editor-Run]').click();
  return 'ok';
})()"""

# Node positions, to see when the force layout has settled.
_POSITIONS = """JSON.stringify([...document.querySelectorAll('svg g.node')]
  .map(n => n.getAttribute('transform')))"""

# The screenshot with the label in a strip below it, composed as a page of its own.
_CAPTIONED = """<!doctype html><html><head><meta charset="utf-8"><style>
html, body {{ margin: 0; background: #ffffff; }}
img {{ display: block; width: {width}px; height: {height}px; }}
p {{ margin: 0; height: {strip}px; box-sizing: border-box; padding: 0 16px; display: flex;
     align-items: center; justify-content: center; text-align: center;
     background: #fff8c5; color: #3b3b00; border-top: 1px solid #d4c24a;
     font: 14px/1.35 sans-serif; }}
</style></head><body><img src="data:image/png;base64,{png}" alt=""><p>{label}</p></body></html>"""
LABEL_STRIP = 48


def query_parts(path: Path) -> tuple[list[str], str]:
    """A cypher/browser file's `:param` lines and its query (comments and `:param` lines
    removed), as a user pastes them."""
    params, body = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith(":param"):
            params.append(stripped)
        elif not stripped.startswith("//"):
            body.append(line.rstrip())
    return params, "\n".join(body).strip()


def run_command(chrome: Chromium, text: str, settle: float = 1.0) -> None:
    """Run one editor entry and wait for its frame to be on the stream."""
    before = chrome.evaluate("document.querySelectorAll('[data-testid=frame]').length")
    outcome = chrome.evaluate(_PASTE_AND_RUN % json.dumps(text))
    if outcome != "ok":
        raise DevToolsError(f"could not run {text.splitlines()[0]!r}: {outcome}")
    if not text.startswith(":clear"):  # every other command adds a frame to the stream
        chrome.wait_for(
            f"document.querySelectorAll('[data-testid=frame]').length > {before}",
            f"the frame of {text.splitlines()[0]!r}",
            timeout=30,
        )
    time.sleep(settle)


def first_frame_error(chrome: Chromium) -> str | None:
    """The error message of the newest frame, if it shows one."""
    return chrome.evaluate(
        """(() => {
          const frame = document.querySelector('[data-testid=frame]');
          const error = frame && frame.querySelector(
            '[data-testid=cypherFrameErrorMessage], [data-testid=errorBanner]');
          return error ? error.innerText.slice(0, 600) : null;
        })()"""
    )


def wait_for_layout(chrome: Chromium, timeout: float = 30) -> int:
    """Wait until the graph is drawn and its nodes stop moving; returns the node count."""
    chrome.wait_for("document.querySelectorAll('svg g.node').length > 0", "the graph", timeout)
    deadline = time.monotonic() + timeout
    last, stable_since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = chrome.evaluate(_POSITIONS)
        if now != last:
            last, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since > 1.5:
            break
        time.sleep(0.25)
    return int(chrome.evaluate("document.querySelectorAll('svg g.node').length"))


def screenshot_browser(
    server: Server, out: Path, executable: str, width: int, height: int, scale: float
) -> None:
    params, query = query_parts(QUERY_FILE)
    bolt = urlsplit(server.uri)
    url = (
        f"{server.http_url.rstrip('/')}/browser/?dbms="
        + quote(f"neo4j://{server.user}@{bolt.hostname}:{bolt.port or 7687}", safe="")
        + "&db=neo4j"
    )
    say(f"Headless Chromium: {url}")
    chrome = Chromium(executable, width, height)
    try:
        chrome.open_page(width, height)
        chrome.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": False},
        )
        chrome.navigate(url)
        # log in: the connect form is pre-filled from ?dbms= (URL, user); the password is typed
        chrome.wait_for("document.querySelector('[data-testid=password]')", "the login form")
        chrome.evaluate("document.querySelector('[data-testid=password]').focus()")
        chrome.insert_text(server.password)
        chrome.evaluate("document.querySelector('[data-testid=connect]').click()")
        connected = chrome.wait_for(
            "document.body.innerText.includes('neo4j$') && 'connected'"
            " || document.querySelector('[data-testid=frame]')?.innerText.match("
            "/(Neo4jError|ServiceUnavailable|unauthorized)[^\\n]*/i)?.[0]",
            "the login",
        )
        if connected != "connected":
            raise DevToolsError(f"login failed: {connected}")
        say("  logged in")
        # "Connect result nodes" off: it would also draw the ended edges between the entities
        run_command(chrome, ":config autoComplete: false")
        run_command(chrome, SCREENSHOT_STYLE)
        run_command(chrome, ";\n".join(p.rstrip(";") for p in params) + ";", settle=2.0)
        run_command(chrome, ":clear", settle=0.5)
        run_command(chrome, query, settle=0.5)
        if error := first_frame_error(chrome):
            raise DevToolsError(f"the query failed in the Browser: {error}")
        nodes = wait_for_layout(chrome)
        edges = chrome.evaluate("document.querySelectorAll('svg g.relationship').length")
        say(f"  {QUERY_FILE.relative_to(ROOT)}: the Browser draws {nodes} nodes, {edges} edges")
        chrome.evaluate(
            "[...document.querySelectorAll('[data-testid=frame] button')]"
            ".find(b => b.title === 'Fullscreen').click()"
        )
        time.sleep(1.0)
        # the Overview panel would cover the right of the graph; then fit the graph to the frame
        chrome.evaluate(
            "document.querySelector('button[aria-label=\"Collapse the node properties "
            "display\"]')?.click()"
        )
        time.sleep(0.5)
        chrome.evaluate("document.querySelector('button[aria-label=zoom-to-fit]')?.click()")
        wait_for_layout(chrome)
        time.sleep(1.0)  # the zoom transition
        png = chrome.send("Page.captureScreenshot", {"format": "png"})["data"]
        # the label goes in a strip below the Browser, which is left as it is
        chrome.send(
            "Emulation.setDeviceMetricsOverride",
            {
                "width": width,
                "height": height + LABEL_STRIP,
                "deviceScaleFactor": scale,
                "mobile": False,
            },
        )
        frame_id = chrome.send("Page.getFrameTree")["frameTree"]["frame"]["id"]
        chrome.send(
            "Page.setDocumentContent",
            {
                "frameId": frame_id,
                "html": _CAPTIONED.format(
                    width=width, height=height, strip=LABEL_STRIP, png=png, label=html.escape(LABEL)
                ),
            },
        )
        chrome.wait_for("document.images.length && document.images[0].complete", "the caption")
        chrome.screenshot(out)
        say(f"  saved {out} ({out.stat().st_size // 1024} KiB)")
        if chrome.blocked:
            say(f"  refused {len(chrome.blocked)} request(s) to non-loopback hosts:")
            for blocked in sorted(set(chrome.blocked)):
                say(f"    {blocked}")
    finally:
        chrome.close()


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--uri",
        help="reuse this server's Bolt URI instead of starting one (password from $NEO4J_PASSWORD)",
    )
    parser.add_argument(
        "--http-url", help="with --uri: its HTTP URL (default: port 7474 of the Bolt host)"
    )
    parser.add_argument("--user", default=os.environ.get("NEO4J_USERNAME", "neo4j"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--width", type=int, default=1440)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--scale", type=float, default=1.5, help="device pixel ratio")
    args = parser.parse_args(argv)
    if not Path(args.chromium).exists():
        parser.error(f"{args.chromium} not found: apt-get install -y chromium")

    if args.uri:
        password = os.environ.get("NEO4J_PASSWORD")
        if not password:
            parser.error("--uri needs the password in $NEO4J_PASSWORD")
        host = urlsplit(args.uri).hostname or "127.0.0.1"
        server = Server(
            uri=args.uri,
            http_url=args.http_url or f"http://{host}:7474",
            user=args.user,
            password=password,
        )
    else:
        server = start_server()
    try:
        load_demo(server)
        screenshot_browser(
            server, args.out.resolve(), args.chromium, args.width, args.height, args.scale
        )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
