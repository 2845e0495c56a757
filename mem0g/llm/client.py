"""One client for every OpenAI-compatible endpoint (OpenAI, Azure, Ollama, vLLM, LM Studio).

Each call is one protocol task: the system message holds the task's prompt, the last user
message is exactly the JSON payload, and the answer is validated against the task's pydantic
model. An invalid answer is asked again with the validation error in the system message (the
payload stays the last user message, as the protocol promises), at most `max_retries` times.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any, Protocol, TypeVar

import openai
from pydantic import BaseModel, ValidationError

from mem0g.config import LimitsConfig, LLMConfig
from mem0g.llm.protocol import SUMMARIZE, Task
from mem0g.llm.reach import ReachCheck, Unreachable
from mem0g.resources import prompt
from mem0g.types import Usage

log = logging.getLogger(__name__)

A = TypeVar("A", bound=BaseModel)
P = TypeVar("P", bound=BaseModel)

_LOCAL_DEFAULTS = {
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
    "vllm": "http://localhost:8000/v1",
}


class LLMError(RuntimeError):
    """The LLM could not give a valid answer; the `add` that asked writes nothing."""


class _ProcessLimit:
    """One concurrency limit for the whole process, however many clients exist."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._limit = 4
        self._active = 0

    def set_limit(self, limit: int) -> None:
        with self._cond:
            self._limit = max(1, limit)
            self._cond.notify_all()

    def __enter__(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._active < self._limit)
            self._active += 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify()


PROCESS_LIMIT = _ProcessLimit()

# Structured-output variants, in the order they are tried. Servers spell "answer in this
# schema" differently: OpenAI, vLLM, LM Studio and Ollama's /v1 take `json_schema`; the
# llama.cpp server (and llama-cpp-python's) takes the schema inside `json_object`; `json` is
# the last resort (the schema goes into the instructions, nothing constrains the output).
MODES = ("tools", "json_schema", "json_object_schema", "json")
# an HTTP error whose message names one of these is about the request's structured-output
# part, so the next mode may work
_MODE_ERROR_WORDS = ("response_format", "json_schema", "schema", "tool", "function")

_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPTIONAL_FIELDS = ("candidates",)
MAX_ANSWER_CHARS = 1_000_000  # no protocol answer is near this; a runaway model is
MAX_DEPTH = 64  # protocol answers nest 3-4 levels; json.loads would recurse without bound


class InvalidAnswer(ValueError):
    """The endpoint's reply holds no usable answer (re-asked like a schema violation)."""


def _nesting(text: str) -> int:
    """The deepest bracket nesting outside strings: checked before json.loads, which would
    otherwise raise RecursionError on a deeply nested answer."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth = max(0, depth - 1)
    return deepest


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in what a model said, in order: <think> blocks dropped
    (an unclosed one means the model was cut off mid-thought: no answer), reasoning before
    an unopened </think> dropped, code fences and prose around the objects ignored."""
    if len(text) > MAX_ANSWER_CHARS:
        raise InvalidAnswer(f"the answer is longer than {MAX_ANSWER_CHARS} characters")
    cleaned = _THINK_RE.sub("", text)
    lowered = cleaned.lower()
    if "</think>" in lowered:  # an unopened closing tag: reasoning came first
        cleaned = cleaned[lowered.rindex("</think>") + len("</think>") :]
        lowered = cleaned.lower()
    if "<think>" in lowered:
        raise InvalidAnswer("the answer ends inside an unclosed <think> block (cut off)")
    if _nesting(cleaned) > MAX_DEPTH:
        raise InvalidAnswer(f"the answer nests deeper than {MAX_DEPTH} levels")
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    position = cleaned.find("{")
    while position >= 0:
        try:
            value, end = decoder.raw_decode(cleaned, position)
        except json.JSONDecodeError:
            position = cleaned.find("{", position + 1)
            continue
        if isinstance(value, dict):
            _check_text(value)
            found.append(value)
        position = cleaned.find("{", end)
    return found


def _check_text(value: Any) -> None:
    """A lone surrogate ("\\ud800") parses but cannot be stored or sent again as UTF-8."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as err:
        raise InvalidAnswer("the answer holds a lone surrogate (not valid Unicode)") from err


def _printable(text: str) -> str:
    """Text that serialises as UTF-8 (a rejected answer quoted back may hold a surrogate)."""
    return text.encode("utf-8", "replace").decode("utf-8")


def parse_json_answer(text: str) -> Any:
    """The final complete JSON object of what a model said (a draft before it loses)."""
    found = json_objects(text)
    if not found:
        raise InvalidAnswer("the answer holds no JSON object")
    return found[-1]


def _validate(answer_model: type[A], text: str, limits: LimitsConfig | None = None) -> A:
    """The last object of the answer that satisfies the schema (a model may draft first)."""
    found = json_objects(text)
    if not found:
        raise InvalidAnswer("the answer holds no JSON object")
    error: ValidationError | None = None
    for value in reversed(found):
        try:
            return answer_model.model_validate(value, context={"limits": limits})
        except ValidationError as err:
            error = error or err
    assert error is not None
    raise error


def _reply_text(response: Any, task: str) -> tuple[str, int, int]:
    """The answer text of a chat completion, checked shape by shape: a proxy's HTML page or
    an SSE stream on HTTP 200, a null message, a tool call to another function or with
    non-string arguments all become InvalidAnswer (re-asked), never AttributeError."""
    if hasattr(response, "model_dump"):
        response = response.model_dump(warnings=False)
    if not isinstance(response, dict):
        kind = "text" if isinstance(response, str | bytes) else type(response).__name__
        start = str(response)[:80].strip() if isinstance(response, str | bytes) else ""
        raise InvalidAnswer(f"the endpoint sent {kind}, not a chat completion: {start!r}")
    raw_usage = response.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    tokens = (
        int(usage.get("prompt_tokens") or 0) if isinstance(usage.get("prompt_tokens"), int) else 0,
        int(usage.get("completion_tokens") or 0)
        if isinstance(usage.get("completion_tokens"), int)
        else 0,
    )
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise InvalidAnswer("the chat completion has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise InvalidAnswer("the chat completion's message is missing or null")
    calls = message.get("tool_calls")
    other: list[str] = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        if function.get("name") != task:
            other.append(str(function.get("name")))
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send the object itself: unambiguous
            return json.dumps(arguments, ensure_ascii=False), *tokens
        if isinstance(arguments, str):
            return arguments, *tokens
        raise InvalidAnswer(f"the tool call's arguments are {type(arguments).__name__}")
    content = message.get("content")
    if isinstance(content, str) and content.strip():
        return content, *tokens
    if other:
        raise InvalidAnswer(f"the tool call names {other[0]!r}, not {task!r}")
    raise InvalidAnswer("the message holds neither a tool call nor content")


def _timeout(config: LLMConfig) -> openai.Timeout:
    """The SDK's own Timeout class (httpx's, or its fork's in later SDKs)."""
    return openai.Timeout(config.timeout, connect=config.connect_timeout)


class TaskCaller(Protocol):
    """What the stages of an add need of an LLM: one protocol task, its answer typed by the
    task (`LLMClient`, and `ReplayingLLM` around it for one add's re-plans)."""

    def call(self, task: Task[P, A], payload: P, usage: Usage | None = None) -> A: ...


class LLMClient:
    """Calls protocol tasks through the `openai` SDK and returns validated answers."""

    def __init__(
        self, config: LLMConfig, client: Any | None = None, limits: LimitsConfig | None = None
    ) -> None:
        self.config = config
        self.limits = limits or LimitsConfig()  # bounds on answers (names, facts, counts)
        PROCESS_LIMIT.set_limit(config.max_concurrency)
        self._client = client or self._make_client(config)
        # an injected client (tests, custom transports) is reached its own way
        self._reach = (
            None
            if client is not None
            else ReachCheck(
                config.resolved_base_url() or _LOCAL_DEFAULTS.get(config.provider),
                config.connect_timeout,
            )
        )
        self.mode: str = config.mode  # the mode in use: the configured one until it fails
        self.modes: dict[str, int] = {}  # calls answered per mode
        self.fallbacks: list[str] = []  # "tools -> json_schema: <why>", in order
        self.calls: dict[str, int] = {}  # answered calls (attempts included), per task
        self.invalid: dict[str, int] = {}  # answers that failed validation, per task
        self.failed: dict[str, int] = {}  # tasks given up after the last retry
        self._mode_lock = threading.Lock()

    @staticmethod
    def _make_client(config: LLMConfig) -> Any:
        base_url = config.resolved_base_url() or _LOCAL_DEFAULTS.get(config.provider)
        # Local servers ignore the key, but the SDK insists on one.
        api_key = config.resolved_api_key() or ("not-needed" if base_url else None)
        if api_key is None:
            raise LLMError(
                "no LLM configured: set OPENAI_API_KEY, or MEM0G_LLM__BASE_URL for a local "
                "OpenAI-compatible server (Ollama, vLLM, LM Studio)"
            )
        if config.provider == "azure":
            return openai.AzureOpenAI(
                api_key=api_key,
                azure_endpoint=base_url or "",
                api_version=config.api_version or "2024-10-21",
                timeout=_timeout(config),
                max_retries=2,
            )
        return openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=_timeout(config), max_retries=2
        )

    def call(self, task: Task[P, A], payload: P, usage: Usage | None = None) -> A:
        """Run one task; returns its validated answer model (raises LLMError)."""
        if not isinstance(payload, task.payload):
            raise TypeError(f"{task.name} takes a {task.payload.__name__}, not {payload!r}")
        return self._call(task.name, task.answer, payload, usage)

    def _call(self, task: str, answer_model: type[A], payload: BaseModel, usage: Usage | None) -> A:
        # optional payload fields (v1 additions) are left out when unset, so a v1 request
        # stays byte-identical
        unset = {name for name in _OPTIONAL_FIELDS if getattr(payload, name, 0) is None}
        payload_json = payload.model_dump_json(exclude=unset)
        instructions = prompt(task)
        feedback = ""
        for attempt in range(self.config.max_retries + 1):
            try:
                text, prompt_tokens, completion_tokens, mode = self._complete(
                    task, instructions + feedback, payload_json, answer_model
                )
            except InvalidAnswer as err:  # no answer text at all (HTML, null message, ...)
                text, prompt_tokens, completion_tokens, mode = "", 0, 0, self.mode
                reply_error: InvalidAnswer | None = err
            else:
                reply_error = None
            with self._mode_lock:
                self.calls[task] = self.calls.get(task, 0) + 1
            if usage is not None:
                usage.add(task, prompt_tokens, completion_tokens, mode=mode)
            try:
                if reply_error is not None:
                    raise reply_error
                return _validate(answer_model, text, self.limits)
            except (ValueError, ValidationError) as err:
                # a ValidationError is a ValueError too: its detail lines say what is wrong
                reason = str(err) if isinstance(err, ValidationError) else str(err).splitlines()[0]
                log.warning("%s: invalid answer (attempt %d): %s", task, attempt + 1, reason)
                with self._mode_lock:
                    self.invalid[task] = self.invalid.get(task, 0) + 1
                feedback = _printable(
                    "\n\n## Your previous answer was rejected\n"
                    f"It was: {text[:2000]}\nThe problem: {reason[:2000]}\n"
                    f"Answer again with arguments for `{task}` that satisfy the schema exactly."
                )
        with self._mode_lock:
            self.failed[task] = self.failed.get(task, 0) + 1
        raise LLMError(f"{task}: no valid answer after {self.config.max_retries + 1} attempts")

    def _complete(
        self, task: str, system: str, payload_json: str, answer_model: type[BaseModel]
    ) -> tuple[str, int, int, str]:
        """One call in the current mode; on an HTTP error about the structured-output part
        of the request, the next mode (when `fallback` is on), remembered for later calls."""
        while True:
            mode = self.mode
            try:
                answer = self._complete_in(mode, task, system, payload_json, answer_model)
            except LLMError as err:
                status = getattr(err.__cause__, "status_code", None)
                about_mode = any(w in str(err).lower() for w in _MODE_ERROR_WORDS)
                later = MODES[MODES.index(mode) + 1 :]
                if not (self.config.fallback and status and status >= 400 and about_mode and later):
                    raise
                with self._mode_lock:
                    if self.mode == mode:
                        self.mode = later[0]
                        reason = " ".join(str(err).split())[:300]
                        self.fallbacks.append(f"{mode} -> {later[0]}: {reason}")
                        log.warning("LLM mode %s failed, trying %s: %s", mode, later[0], reason)
                continue
            with self._mode_lock:
                self.modes[mode] = self.modes.get(mode, 0) + 1
            return (*answer, mode)

    def _complete_in(
        self, mode: str, task: str, system: str, payload_json: str, answer_model: type[BaseModel]
    ) -> tuple[str, int, int]:
        schema = answer_model.model_json_schema()
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": payload_json},
            ],
            "temperature": self.config.temperature,
        }
        if self.config.max_tokens:
            kwargs["max_tokens"] = self.config.max_tokens
        if mode == "tools":
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": task,
                        "description": f"Submit the answer of the {task} task.",
                        "parameters": schema,
                    },
                }
            ]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": task}}
        elif mode == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": task, "schema": schema},
            }
        elif mode == "json_object_schema":
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        else:
            kwargs["response_format"] = {"type": "json_object"}
            kwargs["messages"][0]["content"] += (
                "\n\nAnswer with one JSON object matching this schema:\n" + json.dumps(schema)
            )
        try:
            if self._reach is not None:
                self._reach.ensure()
            with PROCESS_LIMIT:
                response = self._client.chat.completions.create(**kwargs)
        except Unreachable as err:
            raise LLMError(self._unreachable(task, err)) from err
        except openai.APIConnectionError as err:  # includes timeouts
            raise LLMError(self._unreachable(task, err.__cause__ or err)) from err
        except openai.APIStatusError as err:
            where = self._where()
            raise LLMError(f"{task}: the LLM at {where} answered {err.status_code}: {err}") from err
        except openai.APIError as err:
            raise LLMError(f"{task}: the LLM at {self._where()} failed: {err}") from err
        except (ValueError, RecursionError) as err:  # a body that claims JSON but is not
            raise InvalidAnswer(f"the endpoint's reply is not readable JSON: {err}") from err
        return _reply_text(response, task)

    def _where(self) -> str:
        url = self._reach.url if self._reach is not None else "(injected client)"
        return f"{url} (model {self.config.model})"

    def _unreachable(self, task: str, cause: BaseException) -> str:
        why = " ".join(str(cause).split()) or type(cause).__name__
        return f"{task}: cannot reach the LLM at {self._where()}: {why}"

    def check_reachable(self) -> None:
        """Fail now, within `llm.connect_timeout`, if the endpoint takes no connections: the
        CLI asks before it loads an embedding model for an add that cannot work."""
        if self._reach is not None:
            try:
                self._reach.ensure()
            except Unreachable as err:
                raise LLMError(self._unreachable("the first LLM call", err)) from err

    def probe(self) -> str:
        """Find the structured-output mode the endpoint takes with one small `summarize`
        call (used by `mem0g doctor`); returns the mode that answered validly."""
        from mem0g.llm.protocol import PayloadMessage, SummarizePayload

        payload = SummarizePayload(
            summary=None,
            messages=[PayloadMessage(role="user", name="Ana", content="I live in Oslo.",
                                     timestamp="2024-01-01T00:00:00+00:00")],
        )  # fmt: skip
        self.call(SUMMARIZE, payload)
        return self.mode

    def ping(self) -> list[str]:
        """The models the endpoint lists (used by `mem0g doctor`)."""
        try:
            return [m.id for m in self._client.models.list()]
        except openai.APIError as err:
            raise LLMError(f"the LLM endpoint is not reachable: {err}") from err


class ReplayingLLM:
    """One add's LLM calls, remembered by request: a re-plan of the same add (another writer
    changed the tenant meanwhile) gets the same answer to the same request without a call,
    and asks only what changed. Thread-safe: both paths of an add call it at once."""

    def __init__(self, llm: LLMClient) -> None:
        self._llm = llm
        self._answers: dict[tuple[str, str], BaseModel] = {}
        self._guard = threading.Lock()

    def call(self, task: Task[P, A], payload: P, usage: Usage | None = None) -> A:
        key = (task.name, payload.model_dump_json())
        with self._guard:
            if key in self._answers:
                known = self._answers[key]
                assert isinstance(known, task.answer)  # keyed by the task's name
                return known.model_copy(deep=True)
        answer = self._llm.call(task, payload, usage)
        with self._guard:
            self._answers[key] = answer.model_copy(deep=True)
        return answer
