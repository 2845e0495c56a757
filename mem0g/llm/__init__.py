"""The LLM room: protocol models and the OpenAI-compatible client.

What lives here: `protocol.py` (each task's payload and answer models, `Task[P, A]`, the
schemas), `client.py` (`LLMClient`: the OpenAI-compatible client with validation, re-asks,
modes and usage; `TaskCaller`, `ReplayingLLM`), `reach.py` (the first-call reachability
check). Who may import it: the stages (extract/, resolve/, summary.py, pipeline.py), `Memory`,
the CLI, the service's error mapping, the eval harness and the demo. It imports config,
resources and types only.
"""

from mem0g.llm.client import LLMClient, LLMError, parse_json_answer

__all__ = ["LLMClient", "LLMError", "parse_json_answer"]
