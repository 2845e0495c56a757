"""What every part of `Memory` shares: the attributes `Memory.__init__` sets, the tenant check
of every call, the per-tenant add lock, and forgetting a deleted tenant's state. The mixins of
this package derive from `MemoryPart`, so each is type-checked against them."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from mem0g import validation
from mem0g.config import MemoryConfig
from mem0g.embed import CachedEmbedder
from mem0g.locks import TenantLocks
from mem0g.memory.copy import LocalCopy
from mem0g.stores.base import GraphStore, StoreError
from mem0g.summary import SummaryWorker
from mem0g.types import Tenant


class MemoryPart:
    """The state `Memory.__init__` sets, and the helpers every part of `Memory` calls."""

    config: MemoryConfig
    embedder: CachedEmbedder
    store: GraphStore
    summaries: SummaryWorker
    copy: LocalCopy | None  # graph_store.local_copy (memory/copy.py)
    _tenant_locks: TenantLocks
    _closed: bool

    def _tenant(self, user_id: Any, agent_id: Any, run_id: Any) -> Tenant:
        """The call's tenant, checked; every call by tenant passes here, so a closed `Memory`
        says so (its thread pools raised "cannot schedule new futures after shutdown")."""
        if self._closed:
            raise StoreError("this Memory is closed")
        return validation.tenant(self.config.limits, user_id, agent_id, run_id)

    def _lock(self, tenant: Tenant) -> AbstractContextManager[None]:
        """Adds of one tenant are serialised so two of them cannot both create "Alice"."""
        return self._tenant_locks.hold(tenant.key)

    def _forget(self, scope: Tenant) -> None:
        """After a delete: no per-tenant state is kept for tenants that are gone (nor their
        records in a client-held copy)."""
        self.summaries.forget(scope)
        if self.copy is not None:
            self.copy.drop(scope)
