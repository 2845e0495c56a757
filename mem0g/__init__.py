"""mem0g: graph-native long-term memory for AI agents (the Mem0g design)."""

from mem0g.config import MemoryConfig
from mem0g.memory import Memory
from mem0g.types import AddResult, GraphSnapshot, RelationChange, RelationHit, SearchResult

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "GraphSnapshot",
    "Memory",
    "MemoryConfig",
    "RelationChange",
    "RelationHit",
    "SearchResult",
    "__version__",
]
