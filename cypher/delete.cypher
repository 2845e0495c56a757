// Deleting a scope (one managed transaction, these statements in file order; a large scope is
// thinned first, by the thin_tenant_* statements below) and resetting
// the store. Only mem0g's own labels are touched: :Entity, :Episode and the :RELATES between
// them, and the fact memory's :Fact, :FactEvent, :Summary and :TenantSequence (and :PlanLog).

// First, so it works as a lock: deleting the scope's sequence nodes write-locks them, so a
// plan of one of these tenants that is being written finishes first (and is deleted too), and
// one that starts later waits for this deletion.
// name: delete_tenant_sequences
CALL () {
  MATCH (q:TenantSequence) WHERE q.tenant_key = $seek_tenant_key RETURN q
  UNION ALL
  MATCH (q:TenantSequence) WHERE q.user_id = $seek_user_id RETURN q
  UNION ALL
  MATCH (q:TenantSequence)
  WHERE q.user_id = $seek_user_run[0] AND q.run_id = $seek_user_run[1] RETURN q
  UNION ALL
  MATCH (q:TenantSequence) WHERE q.agent_id = $seek_agent_id RETURN q
  UNION ALL
  MATCH (q:TenantSequence) WHERE q.run_id = $seek_run_id RETURN q
}
WITH q
WHERE ($agent_id IS NULL OR q.agent_id = $agent_id)
  AND ($run_id IS NULL OR q.run_id = $run_id)
WITH q, q.tenant_key AS key
DETACH DELETE q
RETURN count(q) AS deleted, collect(key) AS keys;

// The logged plans (write.cypher, log_plan) of the tenants whose sequences were just deleted.
// name: delete_plan_logs
// (`seq IS NOT NULL`: the composite index is used only with a predicate on each property)
UNWIND $keys AS key
MATCH (p:PlanLog)
WHERE p.tenant_key = key AND p.seq IS NOT NULL
DETACH DELETE p;

// name: delete_tenant_relations
CALL () {
  MATCH ()-[r:RELATES]->() WHERE r.tenant_key = $seek_tenant_key RETURN r
  UNION ALL
  MATCH ()-[r:RELATES]->() WHERE r.user_id = $seek_user_id RETURN r
  UNION ALL
  MATCH ()-[r:RELATES]->()
  WHERE r.user_id = $seek_user_run[0] AND r.run_id = $seek_user_run[1] RETURN r
  UNION ALL
  MATCH ()-[r:RELATES]->() WHERE r.agent_id = $seek_agent_id RETURN r
  UNION ALL
  MATCH ()-[r:RELATES]->() WHERE r.run_id = $seek_run_id RETURN r
}
WITH r
WHERE ($agent_id IS NULL OR r.agent_id = $agent_id)
  AND ($run_id IS NULL OR r.run_id = $run_id)
  AND startNode(r):Entity AND endNode(r):Entity
DELETE r
RETURN count(r) AS deleted;

// name: delete_tenant_entities
CALL () {
  MATCH (e:Entity) WHERE e.tenant_key = $seek_tenant_key RETURN e
  UNION ALL
  MATCH (e:Entity) WHERE e.user_id = $seek_user_id RETURN e
  UNION ALL
  MATCH (e:Entity)
  WHERE e.user_id = $seek_user_run[0] AND e.run_id = $seek_user_run[1] RETURN e
  UNION ALL
  MATCH (e:Entity) WHERE e.agent_id = $seek_agent_id RETURN e
  UNION ALL
  MATCH (e:Entity) WHERE e.run_id = $seek_run_id RETURN e
}
WITH e
WHERE ($agent_id IS NULL OR e.agent_id = $agent_id)
  AND ($run_id IS NULL OR e.run_id = $run_id)
CALL (e) {
  MATCH (k:EntityKey)-[:KEY_OF]->(e)
  DETACH DELETE k
}
DETACH DELETE e
RETURN count(e) AS deleted;

// name: delete_tenant_episodes
CALL () {
  MATCH (ep:Episode) WHERE ep.tenant_key = $seek_tenant_key RETURN ep
  UNION ALL
  MATCH (ep:Episode) WHERE ep.user_id = $seek_user_id RETURN ep
  UNION ALL
  MATCH (ep:Episode)
  WHERE ep.user_id = $seek_user_run[0] AND ep.run_id = $seek_user_run[1] RETURN ep
  UNION ALL
  MATCH (ep:Episode) WHERE ep.agent_id = $seek_agent_id RETURN ep
  UNION ALL
  MATCH (ep:Episode) WHERE ep.run_id = $seek_run_id RETURN ep
}
WITH ep
WHERE ($agent_id IS NULL OR ep.agent_id = $agent_id)
  AND ($run_id IS NULL OR ep.run_id = $run_id)
DELETE ep
RETURN count(ep) AS deleted;

// name: delete_tenant_facts
CALL () {
  MATCH (f:Fact) WHERE f.tenant_key = $seek_tenant_key RETURN f
  UNION ALL
  MATCH (f:Fact) WHERE f.user_id = $seek_user_id RETURN f
  UNION ALL
  MATCH (f:Fact) WHERE f.user_id = $seek_user_run[0] AND f.run_id = $seek_user_run[1] RETURN f
  UNION ALL
  MATCH (f:Fact) WHERE f.agent_id = $seek_agent_id RETURN f
  UNION ALL
  MATCH (f:Fact) WHERE f.run_id = $seek_run_id RETURN f
}
WITH f
WHERE ($agent_id IS NULL OR f.agent_id = $agent_id)
  AND ($run_id IS NULL OR f.run_id = $run_id)
DETACH DELETE f
RETURN count(f) AS deleted;

// name: delete_tenant_fact_events
CALL () {
  MATCH (ev:FactEvent) WHERE ev.tenant_key = $seek_tenant_key RETURN ev
  UNION ALL
  MATCH (ev:FactEvent) WHERE ev.user_id = $seek_user_id RETURN ev
  UNION ALL
  MATCH (ev:FactEvent)
  WHERE ev.user_id = $seek_user_run[0] AND ev.run_id = $seek_user_run[1] RETURN ev
  UNION ALL
  MATCH (ev:FactEvent) WHERE ev.agent_id = $seek_agent_id RETURN ev
  UNION ALL
  MATCH (ev:FactEvent) WHERE ev.run_id = $seek_run_id RETURN ev
}
WITH ev
WHERE ($agent_id IS NULL OR ev.agent_id = $agent_id)
  AND ($run_id IS NULL OR ev.run_id = $run_id)
DETACH DELETE ev
RETURN count(ev) AS deleted;

// name: delete_tenant_summaries
CALL () {
  MATCH (s:Summary) WHERE s.tenant_key = $seek_tenant_key RETURN s
  UNION ALL
  MATCH (s:Summary) WHERE s.user_id = $seek_user_id RETURN s
  UNION ALL
  MATCH (s:Summary)
  WHERE s.user_id = $seek_user_run[0] AND s.run_id = $seek_user_run[1] RETURN s
  UNION ALL
  MATCH (s:Summary) WHERE s.agent_id = $seek_agent_id RETURN s
  UNION ALL
  MATCH (s:Summary) WHERE s.run_id = $seek_run_id RETURN s
}
WITH s
WHERE ($agent_id IS NULL OR s.agent_id = $agent_id)
  AND ($run_id IS NULL OR s.run_id = $run_id)
DETACH DELETE s
RETURN count(s) AS deleted;

// Last: a sequence node of the scope found now was created by a plan that committed while this
// deletion ran (a new tenant: it had no sequence node for delete_tenant_sequences to wait on),
// and the statements above may have deleted that plan's facts. Its kept fact count and vector
// sum (facts.cypher, add_fact_vectors) are set again from the facts left, as schema v6 does
// (tenant_fact_embeddings, set_fact_vectors); this SET takes the node's lock first, so no plan
// of the tenant commits between the count and this deletion's commit. It also gets a new epoch
// and plan number (as repair_lock): other clients' held entity vectors and client-held copies
// of that version hold records this deletion removed, and must read the tenant afresh.
// name: delete_tenant_recount
CALL () {
  MATCH (q:TenantSequence) WHERE q.tenant_key = $seek_tenant_key RETURN q
  UNION ALL
  MATCH (q:TenantSequence) WHERE q.user_id = $seek_user_id RETURN q
  UNION ALL
  MATCH (q:TenantSequence)
  WHERE q.user_id = $seek_user_run[0] AND q.run_id = $seek_user_run[1] RETURN q
  UNION ALL
  MATCH (q:TenantSequence) WHERE q.agent_id = $seek_agent_id RETURN q
  UNION ALL
  MATCH (q:TenantSequence) WHERE q.run_id = $seek_run_id RETURN q
}
WITH q
WHERE ($agent_id IS NULL OR q.agent_id = $agent_id)
  AND ($run_id IS NULL OR q.run_id = $run_id)
SET q.fact_vectors = null, q.fact_vector_sum = null, q.fact_count = null,
    q.seq = coalesce(q.seq, 0) + 1, q.epoch = randomUUID()
RETURN q.tenant_key AS key;

// A scope too large for one transaction (writes.py, delete_tenant: more than `reset_batch`
// records) is thinned first, one exact tenant at a time, before the transaction above deletes
// what is left. How many records each of these tenants holds:
// name: thin_tenant_size
UNWIND $keys AS key
RETURN key,
       COUNT { ()-[r:RELATES]->() WHERE r.tenant_key = key }
       + COUNT { (e:Entity) WHERE e.tenant_key = key }
       + COUNT { (f:Fact) WHERE f.tenant_key = key }
       + COUNT { (ep:Episode) WHERE ep.tenant_key = key }
       + COUNT { (ev:FactEvent) WHERE ev.tenant_key = key } AS records;

// First, in its own transaction: the tenant gets a new epoch and plan number (as
// delete_tenant_recount), so other clients' held entity vectors and client-held copies read it
// afresh instead of answering with records the thinning removes; its logged plans go
// (drop_plan_log), being of the old epoch. Returns how many edges and entities it holds.
// name: thin_tenant_begin
MATCH (q:TenantSequence {tenant_key: $tenant_key})
SET q.seq = coalesce(q.seq, 0) + 1, q.epoch = randomUUID()
RETURN COUNT { ()-[r:RELATES]->() WHERE r.tenant_key = $tenant_key }
     + COUNT { (e:Entity) WHERE e.tenant_key = $tenant_key } AS graph;

// Then its bulk, in transactions of $batch rows each (auto-commit: CALL ... IN TRANSACTIONS):
// edges first, so that no batch of entities drags an unbounded number of edges along.
// name: thin_tenant_relations
MATCH ()-[r:RELATES]->()
WHERE r.tenant_key = $tenant_key
CALL (r) {
  DELETE r
} IN TRANSACTIONS OF $batch ROWS;

// name: thin_tenant_entities
MATCH (e:Entity)
WHERE e.tenant_key = $tenant_key
CALL (e) {
  CALL (e) {
    MATCH (k:EntityKey)-[:KEY_OF]->(e)
    DETACH DELETE k
  }
  DETACH DELETE e
} IN TRANSACTIONS OF $batch ROWS;

// name: thin_tenant_episodes
MATCH (ep:Episode)
WHERE ep.tenant_key = $tenant_key
CALL (ep) {
  DETACH DELETE ep
} IN TRANSACTIONS OF $batch ROWS;

// name: thin_tenant_fact_events
MATCH (ev:FactEvent)
WHERE ev.tenant_key = $tenant_key
CALL (ev) {
  DETACH DELETE ev
} IN TRANSACTIONS OF $batch ROWS;

// Facts last, $batch at a time in a managed transaction each, with add_fact_vectors in the
// same transaction: the tenant's kept fact count and vector sum lose exactly the facts deleted,
// so they are right after every batch (an interrupted deletion leaves them true). The SET
// takes the tenant's lock first, as a plan's turn (lock_tenant) does: no plan of the tenant
// changes its facts in between.
// name: thin_tenant_facts
MATCH (q:TenantSequence {tenant_key: $tenant_key})
SET q.seq = coalesce(q.seq, 0) + 1
WITH q
MATCH (f:Fact)
WHERE f.tenant_key = $tenant_key
WITH f LIMIT $batch
WITH f, f.embedding AS embedding
DETACH DELETE f
RETURN embedding;

// Batched, so a large store is emptied without one huge transaction (auto-commit queries:
// CALL ... IN TRANSACTIONS cannot run inside a managed transaction): edges first, so no batch
// of nodes drags an unbounded number of relationships along. Schema stays.
// name: reset_relations
MATCH (:Entity)-[r:RELATES]->(:Entity)
CALL (r) {
  DELETE r
} IN TRANSACTIONS OF $batch ROWS;

// name: reset_nodes
MATCH (n)
WHERE n:Entity OR n:EntityKey OR n:Episode OR n:Fact OR n:FactEvent OR n:Summary
   OR n:TenantSequence OR n:EntityEvent OR n:PossibleDuplicate OR n:PlanLog
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF $batch ROWS;
