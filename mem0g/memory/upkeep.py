"""`Memory`'s methods on the store as a whole: its tenants, deletes (a scope, or everything),
counts, and the vector-index rebuild."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mem0g.memory.parts import MemoryPart
from mem0g.stores.base import IndexRebuild, StoreStats, WarmupStatus, wait_until_ended
from mem0g.stores.repair import describe
from mem0g.types import Tenant


def check_delete_scope(scope: Tenant, all_users: bool) -> None:
    """A delete without user_id spans users (`agent_id="x"` is agent x with every user): it
    must be confirmed with `all_users`; a ValueError otherwise (the CLI asks it first)."""
    if scope.user_id is None and not all_users:
        raise ValueError(
            f"delete_all without user_id deletes the data of {describe(scope)} for every "
            "user; pass all_users=True (CLI: --all-users) to confirm"
        )


class StoreUpkeep(MemoryPart):
    """`Memory`'s tenant list, deletes, counts and index upkeep."""

    def tenants(self) -> list[Tenant]:
        """Every exact tenant that has data in the store."""
        return self.store.tenants()

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        all_users: bool = False,
    ) -> int:
        """Delete every record the filter matches (unset ids match anything, as in reads).
        Without `user_id` the filter spans users (`agent_id="x"` is agent x with *every*
        user), so it must be confirmed with `all_users=True`; ValueError otherwise."""
        scope = self._tenant(user_id, agent_id, run_id)
        check_delete_scope(scope, all_users)
        self.summaries.wait_idle()  # a refresh finishing later must not bring a summary back
        with self.summaries.deleting():  # nor one another thread's add queues meanwhile
            deleted = self.store.delete_tenant(scope)
        self._forget(scope)
        return deleted

    def reset(self) -> None:
        self.summaries.wait_idle()
        with self.summaries.deleting():
            self.store.reset()
        if self.copy is not None:
            self.copy.drop(None)

    def stats(self, **ids: str | None) -> StoreStats:
        """Counts for a tenant scope (any ids given) or the whole store, facts included."""
        scope = Tenant(**ids) if any(ids.values()) else None
        counts = self.store.stats(scope)  # facts counted by the store: never read for a count
        warmup = self.store.warmup_status
        return counts.model_copy(update={
            "warmup": None if warmup.state == "off" else warmup,
            "local_copy": None if self.copy is None else self.copy.status(),
        })  # fmt: skip

    def wait_for_warmup(
        self,
        timeout: float | None = None,
        progress: Callable[[WarmupStatus], None] | None = None,
        every: float = 5.0,
    ) -> WarmupStatus:
        """Block until the store's warm-up has ended (or `timeout` seconds): a deploy that
        sends traffic only then gets a warm server from its first search (Neo4j; a store
        without a warm-up returns at once). `progress` sees the status every `every` s."""
        return wait_until_ended(lambda: self.store.warmup_status, timeout, progress, every)

    def rebuild_indexes(
        self,
        kinds: Sequence[str] | None = None,
        *,
        progress: Callable[[str, float], None] | None = None,
    ) -> list[IndexRebuild]:
        """Maintenance for a store that keeps vector indexes (Neo4j): rebuild them in one pass
        each, after a bulk load or many small adds; searches stay correct while it runs.
        Returns [] for the embedded store, which has none."""
        return self.store.rebuild_vector_indexes(kinds, progress=progress)
