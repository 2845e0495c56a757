"""mem0g: graph-native long-term memory for AI agents (the Mem0g design)."""

from mem0g.config import MemoryConfig
from mem0g.memory import Memory
from mem0g.types import AddResult, GraphSnapshot, RelationChange, RelationHit, SearchResult

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "AsyncClient",
    "AsyncMemory",
    "Client",
    "GraphSnapshot",
    "Memory",
    "MemoryConfig",
    "RelationChange",
    "RelationHit",
    "SearchResult",
    "__version__",
]


def __getattr__(name: str) -> object:
    """The doors (mem0g.service) load on first use: `import mem0g` stays light."""
    if name in ("Client", "AsyncClient"):
        from mem0g.service import client

        return getattr(client, name)
    if name == "AsyncMemory":
        from mem0g.service.aio import AsyncMemory

        return AsyncMemory
    raise AttributeError(f"module 'mem0g' has no attribute {name!r}")
