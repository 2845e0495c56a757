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
from typing import Any, TypeVar

import httpx
import openai
from pydantic import BaseModel, ValidationError

from mem0g.config import LLMConfig
from mem0g.llm.protocol import TASKS
from mem0g.llm.reach import ReachCheck, Unreachable
from mem0g.resources import prompt
from mem0g.types import Usage

log = logging.getLogger(__name__)

A = TypeVar("A", bound=BaseModel)

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
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_json_answer(text: str) -> Any:
    """Pull one JSON object out of what a model said: drops <think> blocks, code fences, prose."""
    cleaned = _THINK_RE.sub("", text)
    if "</think>" in cleaned.lower():  # an unopened closing tag: reasoning came first
        cleaned = cleaned[cleaned.lower().rindex("</think>") + len("</think>") :]
    fence = _FENCE_RE.search(cleaned)
    if fence:
        cleaned = fence.group(1)
    cleaned = cleaned.strip()
    try:
        value = json.loads(cleaned)
        if isinstance(value, dict):
            return value
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", cleaned):
        try:
            value, _ = decoder.raw_decode(cleaned, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("the answer holds no JSON object")


def _timeout(config: LLMConfig) -> httpx.Timeout:
    return httpx.Timeout(config.timeout, connect=config.connect_timeout)


class LLMClient:
    """Calls protocol tasks through the `openai` SDK and returns validated answers."""

    def __init__(self, config: LLMConfig, client: Any | None = None) -> None:
        self.config = config
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
        self.mode = config.mode  # the mode in use: the configured one until it fails
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

    def call(self, task: str, payload: BaseModel, usage: Usage | None = None) -> Any:
        """Run one task; returns the validated answer model (raises LLMError)."""
        answer_model = TASKS[task][1]
        # optional payload fields (v1 additions) are left out when unset, so a v1 request
        # stays byte-identical
        unset = {name for name in _OPTIONAL_FIELDS if getattr(payload, name, 0) is None}
        payload_json = payload.model_dump_json(exclude=unset)
        instructions = prompt(task)
        feedback = ""
        for attempt in range(self.config.max_retries + 1):
            text, prompt_tokens, completion_tokens, mode = self._complete(
                task, instructions + feedback, payload_json, answer_model
            )
            with self._mode_lock:
                self.calls[task] = self.calls.get(task, 0) + 1
            if usage is not None:
                usage.add(task, prompt_tokens, completion_tokens, mode=mode)
            try:
                return answer_model.model_validate(parse_json_answer(text))
            except (ValueError, ValidationError) as err:
                reason = str(err).splitlines()[0] if isinstance(err, ValueError) else str(err)
                log.warning("%s: invalid answer (attempt %d): %s", task, attempt + 1, reason)
                with self._mode_lock:
                    self.invalid[task] = self.invalid.get(task, 0) + 1
                feedback = (
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
        if not response.choices:
            return "", 0, 0
        message = response.choices[0].message
        text = ""
        if message.tool_calls:
            text = message.tool_calls[0].function.arguments or ""
        elif message.content:
            text = message.content
        used = response.usage
        return (
            text,
            used.prompt_tokens if used else 0,
            used.completion_tokens if used else 0,
        )

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
        self.call("summarize", payload)
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
        self._answers: dict[tuple[str, str], Any] = {}
        self._guard = threading.Lock()

    def call(self, task: str, payload: BaseModel, usage: Usage | None = None) -> Any:
        key = (task, payload.model_dump_json())
        with self._guard:
            if key in self._answers:
                return self._answers[key].model_copy(deep=True)
        answer = self._llm.call(task, payload, usage)
        with self._guard:
            self._answers[key] = answer.model_copy(deep=True)
        return answer
