"""The doors onto one `Memory`: a REST service (FastAPI), Python HTTP clients, `AsyncMemory`,
an MCP server and a graph explorer page. Every door is a thin layer that calls `Memory`'s
public methods: no memory logic lives here, only transport, auth, limits and queues.

Modules are imported lazily by their users (FastAPI, uvicorn and mcp load only when a door is
opened), so `import mem0g` stays light.

What lives here: `app.py` (the FastAPI factory, `serve`), `routes.py` (/v1), `auth.py`,
`jobs.py`, `errors.py`, `settings.py`, `client.py` (`Client`, `AsyncClient`), `aio.py`
(`AsyncMemory`), `mcp_server.py`, `explorer.py` + `static/` (the page), `cli.py` (`serve`,
`mcp`, `keys`). Who may import it: users (`mem0g.Client`, `mem0g.AsyncMemory`), the CLI (which
registers `service.cli`), export.py (the explorer page as a dump format), tests and scripts.
It imports `Memory`, export, types and llm, and from the stores only their records and errors
(`stores.base`), never a store.
"""
