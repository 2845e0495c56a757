"""The LLM room: protocol models and the OpenAI-compatible client."""

from mem0g.llm.client import LLMClient, LLMError, parse_json_answer

__all__ = ["LLMClient", "LLMError", "parse_json_answer"]
