"""API keys: a keys file of hashed keys, each with tenant grants and scopes.

Keys are random 256-bit tokens, so a plain SHA-256 of the key is enough to keep the file safe
to read (a slow password hash protects guessable secrets, which these are not); the presented
key's hash is compared with every stored hash in constant time (`hmac.compare_digest`), with
no early exit, so timing tells nothing about which key nearly matched.

A grant names, per id (user_id / agent_id / run_id), an exact value or a prefix. A request may
reach a tenant only when every id the grant constrains is *set* in the request and matches:
reads treat unset ids as "any", so a grant on user_id "alice" + agent_id "bot" must never
answer a read for all of Alice's agents. `"tenants": "*"` grants every tenant.

Scopes: `read` (search, get, export, jobs), `write` (add, update, delete, merge), `admin`
(reset, stats and exports across all tenants). Without a keys file the service runs open (every
request is an admin), which `settings.check_bind` allows on loopback only.

Keys file (JSON):
    {"keys": [{"name": "alice-app", "sha256": "<hex>", "scopes": ["read", "write"],
               "tenants": [{"user_id": "alice"}, {"user_id": {"prefix": "team-a:"}}]}]}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mem0g.types import Tenant

Scope = Literal["read", "write", "admin"]
IDS = ("user_id", "agent_id", "run_id")
KEY_PREFIX = "m0g_"


class Prefix(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prefix: str = Field(min_length=1)


class Grant(BaseModel):
    """One tenant pattern; ids left out are unconstrained (but at least one must be given)."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | Prefix | None = None
    agent_id: str | Prefix | None = None
    run_id: str | Prefix | None = None

    @model_validator(mode="after")
    def _constrains(self) -> Grant:
        if all(getattr(self, f) is None for f in IDS):
            raise ValueError("a grant constrains at least one of user_id, agent_id, run_id")
        return self

    def allows(self, tenant: Tenant) -> bool:
        for field in IDS:
            rule = getattr(self, field)
            if rule is None:
                continue
            value = getattr(tenant, field)
            if value is None:  # an unset id reads as "any": wider than the grant
                return False
            if isinstance(rule, Prefix):
                if not value.startswith(rule.prefix):
                    return False
            elif value != rule:
                return False
        return True


class KeyEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    scopes: list[Scope] = Field(min_length=1)
    tenants: Literal["*"] | list[Grant]

    @field_validator("tenants")
    @classmethod
    def _some(cls, value: object) -> object:
        if isinstance(value, list) and not value:
            raise ValueError("tenants: give '*' or at least one grant")
        return value


class KeysFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keys: list[KeyEntry] = Field(default_factory=list)


class Principal(BaseModel):
    """Who is calling: the key's name, scopes and grants (the open service: one admin)."""

    name: str
    scopes: frozenset[str]
    tenants: Literal["*"] | list[Grant]

    def has(self, scope: Scope) -> bool:
        return scope in self.scopes

    def reaches(self, tenant: Tenant) -> bool:
        return self.tenants == "*" or any(g.allows(tenant) for g in self.tenants)


OPEN = Principal(name="open", scopes=frozenset({"read", "write", "admin"}), tenants="*")


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


class Keyring:
    """The loaded keys file; `None` path: the open service (no keys, loopback only)."""

    def __init__(self, entries: list[KeyEntry] | None = None) -> None:
        self.entries = entries
        names = [e.name for e in entries or []]
        if len(names) != len(set(names)):
            raise ValueError("keys file: key names must be unique")

    @property
    def configured(self) -> bool:
        return self.entries is not None

    @classmethod
    def load(cls, path: Path | None) -> Keyring:
        if path is None:
            return cls(None)
        try:
            doc = KeysFile.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError, ValidationError) as err:
            raise ValueError(f"keys file {path}: {err}") from err
        if not doc.keys:
            raise ValueError(f"keys file {path}: no keys")
        return cls(doc.keys)

    def authenticate(self, key: str | None) -> Principal | None:
        """The key's principal, or None (unknown or missing key). Open service: always admin."""
        if self.entries is None:
            return OPEN
        if not key:
            return None
        presented = hash_key(key)
        found: KeyEntry | None = None
        for entry in self.entries:  # every entry is compared: no early exit
            if hmac.compare_digest(presented, entry.sha256):
                found = entry
        return None if found is None else _principal(found)

    def named(self, name: str) -> Principal | None:
        """The principal of the key called `name` (already authenticated by its hash: the MCP
        door's bearer middleware hands on the name, not the key)."""
        found = next((e for e in self.entries or [] if e.name == name), None)
        return None if found is None else _principal(found)


def _principal(entry: KeyEntry) -> Principal:
    return Principal(name=entry.name, scopes=frozenset(entry.scopes), tenants=entry.tenants)


def add_key(path: Path, name: str, scopes: list[Scope], tenants: Literal["*"] | list[Grant]) -> str:
    """Create a key, append its hash to the keys file (made if missing), return the key: the
    only time it is shown."""
    doc = KeysFile()
    if path.exists():
        doc = KeysFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    if any(e.name == name for e in doc.keys):
        raise ValueError(f"a key named {name!r} exists already in {path}")
    key = new_key()
    doc.keys.append(KeyEntry(name=name, sha256=hash_key(key), scopes=scopes, tenants=tenants))
    path.write_text(doc.model_dump_json(indent=2, exclude_none=True) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return key
