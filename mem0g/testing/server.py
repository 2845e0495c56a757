"""TEST DOUBLE: a scripted, OpenAI-compatible Chat Completions server for tests and demos.

This is NOT an LLM. ``ScriptedLLMServer`` listens on a real socket (127.0.0.1 by default) so the
real ``openai`` SDK and the real HTTP stack are exercised, but every answer comes from a table of
scripted rules. That makes tests deterministic and free, lets users check their own integration
without a paid API, and lets us simulate failures (malformed JSON, HTTP errors) on purpose.

Protocol (v1): ``POST {base}/chat/completions`` where the last user message's content is one JSON
object (the "payload") with a ``"task"`` key; with ``tools`` present the task is the forced
function's name and the answer is a tool call, otherwise the answer is the message content.
``GET {base}/models`` lists a single model so a "doctor" command can check reachability.

Rules are tried in order; the first whose ``task`` matches (omitted or ``"*"`` = any) and whose
``match`` holds answers. Rule keys:

- ``task``: task name, or ``"*"`` / omitted for any task.
- ``match``: optional; ``{"contains": str | list[str], "messages": str | list[str],
  "payload": <subset pattern>}``. ``contains`` searches the whole payload; ``messages``
  searches only the new messages' contents (not ``context.recent``, which repeats earlier
  turns), so a rule for one turn does not also answer the turns after it.
- ``response``: a dict (sent as JSON), ``{"raw": str}`` (sent verbatim), ``{"status": int,
  "error": str}`` (HTTP error), or, from Python only, a callable ``payload -> dict``.
  Broken servers, for error-contract tests: ``{"completion": dict}`` is sent as the whole
  HTTP 200 body (a null message, arguments as an object, another function's tool call);
  ``{"body": str, "content_type": str}`` is sent as the body of an HTTP 200 reply (an HTML
  page, an SSE stream).
- ``responses``: a list of the above, used in turn; the last one repeats.
- ``times``: optional int, the rule answers at most that many requests.

Unmatched requests get HTTP 400 naming the task, so a test with a missing script fails loudly.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mem0g.testing.matching import (
    TEST_DOUBLE_LABEL,
    Rule,
    _Answer,
    _extract_payload,
    _match_holds,
    _message_text,
    _render,
    _request_task,
    _validate_rule,
)

__all__ = ["TEST_DOUBLE_LABEL", "RecordedRequest", "Rule", "ScriptedLLMServer", "main"]

logger = logging.getLogger(__name__)

_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MODELS_PATHS = frozenset({"/v1/models", "/models"})
_EXCERPT_CHARS = 240
_FACT_PATH_TASKS = {"extract_facts", "update_memory"}
# a script written for the graph tasks alone meets these first: Memory runs the fact path
# by default, and the bare "no rule matches" did not say so (issue #15 item 1)
_FACT_PATH_HINT = (
    "Memory runs the fact path by default: script it (turn(..., facts=[...])) or turn it "
    'off ({"memory": {"facts": False}}); '
)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it, kept so tests can assert what the client sent."""

    task: str | None
    payload: dict[str, Any]
    body: dict[str, Any]
    matched_rule_index: int | None
    path: str = "/v1/chat/completions"
    received_at: float = field(default_factory=time.time)


def _estimate_tokens(text: str) -> int:
    """Rough token estimate (chars / 4) so usage accounting code has numbers to work with."""
    return math.ceil(len(text) / 4)


def _error_body(message: str, error_type: str) -> dict[str, Any]:
    """OpenAI-style error envelope, so the SDK raises its usual APIStatusError subclasses."""
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


class _Handler(BaseHTTPRequestHandler):
    """HTTP handler; all logic lives in ScriptedLLMServer, this only speaks HTTP."""

    protocol_version = "HTTP/1.1"  # keep-alive: benchmarks make many fast calls
    # headers and body go out in two writes; with Nagle on, the client's delayed ACK adds
    # ~40 ms to every answer
    disable_nagle_algorithm = True
    server_version = "mem0g-scripted-llm-test-double/1"
    timeout = 60  # idle keep-alive connections must not pin threads forever
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging; tests should not be noisy."""

    def _send_json(self, status: int, obj: Any) -> None:
        content_type = "application/json"
        if isinstance(obj, _Answer):  # a scripted broken body, sent as it is
            content_type = obj.content_type
            obj = obj.body
        data = (obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)).encode(
            "utf-8", "surrogatepass"
        )
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Test-Double", "mem0g-scripted-llm")
        self.end_headers()
        self.wfile.write(data)

    def _path(self) -> str:
        path = self.path.split("?", 1)[0]
        return path.rstrip("/") or "/"

    def do_GET(self) -> None:
        path = self._path()
        if path in _MODELS_PATHS:
            self._send_json(200, self.server.owner.models_response())
        else:
            self._not_found(path)

    def do_POST(self) -> None:
        path = self._path()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if path not in _CHAT_PATHS:
            self._not_found(path)
            return
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            msg = f"{TEST_DOUBLE_LABEL}: request body is not valid JSON ({exc})"
            self._send_json(400, _error_body(msg, "invalid_request_error"))
            return
        if not isinstance(body, dict):
            msg = f"{TEST_DOUBLE_LABEL}: request body must be a JSON object"
            self._send_json(400, _error_body(msg, "invalid_request_error"))
            return
        status, obj = self.server.owner.handle_chat(body, path)
        self._send_json(status, obj)

    def _not_found(self, path: str) -> None:
        msg = f"{TEST_DOUBLE_LABEL}: no route for {self.command} {path}"
        self._send_json(404, _error_body(msg, "not_found_error"))


class _HTTPServer(ThreadingHTTPServer):
    """Threading server that tracks open connections so stop() can cut keep-alives promptly."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], owner: ScriptedLLMServer) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Shut down live sockets so handler threads blocked on keep-alive reads exit now."""
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class ScriptedLLMServer:
    """TEST DOUBLE of an OpenAI-compatible LLM API that answers from scripted rules.

    Use as a context manager (``with ScriptedLLMServer(rules) as srv``) and point an ``openai``
    client at ``srv.base_url``. Requests are recorded thread-safely in ``srv.requests``.
    """

    def __init__(
        self,
        rules: Iterable[Mapping[str, Any]] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "scripted",
    ) -> None:
        self.host = host
        self.model = model
        self._requested_port = port
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self._uses: list[int] = []
        self._requests: list[RecordedRequest] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        for rule in rules:
            self.add_rule(rule)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_file(cls, path: str | os.PathLike[str], **kwargs: Any) -> ScriptedLLMServer:
        """Load rules from a JSON file ``{"rules": [...]}`` so scripts can ship as data."""
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if isinstance(data, Mapping):
            if "rules" not in data:
                raise ValueError(f"{os.fspath(path)}: expected a JSON object with a 'rules' list")
            rules = data["rules"]
        else:
            rules = data
        if not isinstance(rules, list):
            raise ValueError(f"{os.fspath(path)}: 'rules' must be a list")
        return cls(rules, **kwargs)

    def add_rule(self, rule: Mapping[str, Any]) -> int:
        """Append a rule (tried after existing ones) and return its index."""
        with self._lock:
            validated = _validate_rule(rule, len(self._rules))
            self._rules.append(validated)
            self._uses.append(0)
            return len(self._rules) - 1

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> ScriptedLLMServer:
        """Bind the socket and serve on a daemon thread; idempotent."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self.host, self._requested_port), self)
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"mem0g-scripted-llm-test-double:{httpd.server_address[1]}",
            daemon=True,
        )
        self._httpd, self._thread = httpd, thread
        thread.start()
        logger.debug("%s listening on %s", TEST_DOUBLE_LABEL, self.base_url)
        return self

    def stop(self) -> None:
        """Stop serving, close open connections and join the thread; idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._httpd = self._thread = None
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        logger.debug("%s stopped", TEST_DOUBLE_LABEL)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.base_url if self.running else "not running"
        return f"<ScriptedLLMServer TEST DOUBLE {where}, {len(self._rules)} rules>"

    @property
    def running(self) -> bool:
        """Whether the server is currently accepting requests."""
        return self._httpd is not None

    @property
    def port(self) -> int:
        """The bound port (useful with port=0, the ephemeral default)."""
        if self._httpd is None:
            raise RuntimeError("ScriptedLLMServer is not running; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """OpenAI-client base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    # ----------------------------------------------------------------- inspection
    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot of all recorded requests, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def unmatched(self) -> list[RecordedRequest]:
        """Recorded requests no rule answered (they received HTTP 400)."""
        return [r for r in self.requests if r.matched_rule_index is None]

    @property
    def rules(self) -> list[Rule]:
        """Copy of the rule table, in matching order."""
        with self._lock:
            return [dict(rule) for rule in self._rules]

    def calls(self, task: str | None = None) -> int:
        """Number of recorded requests for ``task`` (all requests when ``task`` is None)."""
        with self._lock:
            return sum(1 for r in self._requests if task is None or r.task == task)

    def reset_requests(self) -> None:
        """Forget recorded requests (rule use counters for ``times``/``responses`` are kept)."""
        with self._lock:
            self._requests.clear()

    # ----------------------------------------------------------------- protocol
    def models_response(self) -> dict[str, Any]:
        """Body for ``GET /models``: one model, so reachability checks succeed."""
        return {
            "object": "list",
            "data": [
                {"id": self.model, "object": "model", "created": 0, "owned_by": "mem0g-test-double"}
            ],
        }

    def _select(
        self, task: str | None, payload: dict[str, Any], body: dict[str, Any], path: str
    ) -> tuple[int | None, Any]:
        """Pick the first applicable rule and record the request, atomically."""
        text = json.dumps(payload, ensure_ascii=False)
        with self._lock:
            chosen: int | None = None
            spec: Any = None
            for index, rule in enumerate(self._rules):
                rule_task = rule.get("task", "*")
                if rule_task != "*" and rule_task != task:
                    continue
                times = rule.get("times")
                if times is not None and self._uses[index] >= times:
                    continue
                if not _match_holds(rule.get("match"), payload, text):
                    continue
                uses = self._uses[index]
                self._uses[index] = uses + 1
                if "responses" in rule:
                    responses = rule["responses"]
                    spec = responses[min(uses, len(responses) - 1)]
                else:
                    spec = rule["response"]
                chosen = index
                break
            self._requests.append(RecordedRequest(task, payload, body, chosen, path))
        return chosen, spec

    def handle_chat(
        self, body: dict[str, Any], path: str = "/v1/chat/completions"
    ) -> tuple[int, dict[str, Any]]:
        """Answer one chat-completions body; returns (HTTP status, JSON body)."""
        payload = _extract_payload(body.get("messages"))
        task = _request_task(body, payload)
        if body.get("stream"):
            with self._lock:
                self._requests.append(RecordedRequest(task, payload, body, None, path))
            msg = f"{TEST_DOUBLE_LABEL}: streaming is not supported; send stream=false"
            return 400, _error_body(msg, "invalid_request_error")
        index, spec = self._select(task, payload, body, path)
        if index is None:
            excerpt = json.dumps(payload, ensure_ascii=False)
            if len(excerpt) > _EXCERPT_CHARS:
                excerpt = excerpt[:_EXCERPT_CHARS] + "…"
            msg = (
                f"{TEST_DOUBLE_LABEL}: no scripted rule matches task {task!r}; "
                f"{_FACT_PATH_HINT if task in _FACT_PATH_TASKS else ''}"
                f"payload excerpt: {excerpt}"
            )
            return 400, _error_body(msg, "scripted_no_match")
        answer = _render(spec, payload)
        if answer.error is not None:
            return answer.status, _error_body(answer.error, "scripted_error")
        if answer.body is not None:
            return 200, answer  # type: ignore[return-value]
        return 200, self._completion(body, task, answer.text)

    def _completion(self, body: dict[str, Any], task: str | None, text: str) -> dict[str, Any]:
        """Wrap answer text as a chat.completion, as a tool call when the request had tools."""
        messages = body.get("messages")
        prompt = "".join(
            _message_text(m.get("content"))
            for m in (messages if isinstance(messages, list) else [])
            if isinstance(m, Mapping)
        )
        message: dict[str, Any]
        if body.get("tools"):
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{uuid.uuid4().hex[:24]}",
                        "type": "function",
                        "function": {"name": task or "", "arguments": text},
                    }
                ],
            }
            finish_reason = "tool_calls"
        else:
            message = {"role": "assistant", "content": text}
            finish_reason = "stop"
        prompt_tokens, completion_tokens = _estimate_tokens(prompt), _estimate_tokens(text)
        model = body.get("model")
        return {
            "id": f"chatcmpl-scripted-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model if isinstance(model, str) and model else self.model,
            "system_fingerprint": "mem0g-test-double",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a rules file until interrupted, for manual integration checks and demos."""
    parser = argparse.ArgumentParser(description=f"Run the {TEST_DOUBLE_LABEL}.")
    parser.add_argument("rules", help='JSON file {"rules": [...]}')
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = ScriptedLLMServer.from_file(args.rules, host=args.host, port=args.port).start()
    done = threading.Event()
    # SIGTERM (e.g. from a demo's subprocess.terminate) should stop as cleanly as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print(f"{TEST_DOUBLE_LABEL} listening on {server.base_url} (Ctrl-C to stop)", file=sys.stderr)
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print(f"{TEST_DOUBLE_LABEL} stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
