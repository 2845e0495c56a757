"""The doors onto one `Memory`: a REST service (FastAPI), Python HTTP clients, `AsyncMemory`,
an MCP server and a graph explorer page. Every door is a thin layer that calls `Memory`'s
public methods: no memory logic lives here, only transport, auth, limits and queues.

Modules are imported lazily by their users (FastAPI, uvicorn and mcp load only when a door is
opened), so `import mem0g` stays light.
"""
