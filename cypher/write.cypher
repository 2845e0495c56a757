// Writes of one WritePlan. All of them run in ONE managed transaction (session.execute_write),
// in this order: lock_tenant, plan_check, create_episode, create_entities, update_aliases,
// create_relations, invalidate_relations, add_mentions, then the fact memory's (facts.cypher):
// delete_facts, create_facts, update_facts, create_fact_events. Rows are batched with UNWIND;
// every value is a parameter.

// First in every plan's transaction: the tenant's next plan number. The SET reads q.seq, so
// Cypher write-locks the node before reading it, and the lock is held until COMMIT: writers of
// one tenant take turns (the checks below then see every earlier writer's commit, as in the
// embedded store), $seq follows commit order, and other tenants are not held up. MERGE is safe
// under concurrency thanks to the uniqueness constraint on tenant_key.
// name: lock_tenant
// q.epoch tells a tenant written again after a delete from the one before (a store's cache of
// entity vectors, see entity_vectors_all, starts afresh then).
MERGE (q:TenantSequence {tenant_key: $tenant_key})
ON CREATE SET q.user_id = $user_id, q.agent_id = $agent_id, q.run_id = $run_id,
              q.epoch = randomUUID()
SET q.seq = coalesce(q.seq, 0) + 1
RETURN q.seq AS seq, q.epoch AS epoch;

// Which ids the plan would create that are taken, and which ids it refers to that this exact
// tenant owns. Python turns the answer into a StoreError before anything is written.
// Facts: a new fact's id is taken while a :Fact or any history (:FactEvent) has it; a change
// needs a current fact of the exact tenant; an event may also name a deleted fact whose
// history is this tenant's.
// name: plan_check
RETURN
  $episode_id AS episode_id,
  EXISTS { MATCH (ep:Episode {id: $episode_id}) } AS episode_taken,
  COLLECT { UNWIND $new_entity_ids AS id MATCH (e:Entity {id: id}) RETURN id } AS entities_taken,
  COLLECT {
    UNWIND $new_relation_ids AS id MATCH ()-[r:RELATES {id: id}]->() RETURN id
  } AS relations_taken,
  COLLECT {
    UNWIND $entity_refs AS id MATCH (e:Entity {id: id})
    WHERE e.tenant_key = $tenant_key
    RETURN id
  } AS entities_owned,
  COLLECT {
    UNWIND $relation_refs AS id MATCH ()-[r:RELATES {id: id}]->()
    WHERE r.tenant_key = $tenant_key
    RETURN id
  } AS relations_owned,
  COLLECT {
    UNWIND $new_fact_ids AS id
    WITH id
    WHERE EXISTS { MATCH (f:Fact {id: id}) } OR EXISTS { MATCH (ev:FactEvent {fact_id: id}) }
    RETURN id
  } AS facts_taken,
  COLLECT {
    UNWIND $new_event_ids AS id MATCH (ev:FactEvent {id: id}) RETURN id
  } AS events_taken,
  COLLECT {
    UNWIND $new_entity_event_ids AS id MATCH (ev:EntityEvent {id: id}) RETURN id
  } AS entity_events_taken,
  COLLECT {
    UNWIND $fact_refs AS id MATCH (f:Fact {id: id})
    WHERE f.tenant_key = $tenant_key
    RETURN id
  } AS facts_owned,
  COLLECT {
    UNWIND $fact_refs AS id
    WITH id
    WHERE NOT EXISTS { MATCH (f:Fact {id: id}) }
      AND EXISTS { MATCH (ev:FactEvent {fact_id: id}) WHERE ev.tenant_key = $tenant_key }
    RETURN id
  } AS facts_with_history;

// $seq (from lock_tenant) orders a tenant's messages: episodes in commit order.
// name: create_episode
CREATE (ep:Episode)
SET ep = $props, ep.seq = $seq;

// Embeddings go through db.create.setNodeVectorProperty: stored as float32, like the
// embedded store keeps them, and half the size of a list of doubles.
// e.seq, the plan's number, lets a store read only the entities written since it last looked.
// name: create_entities
UNWIND $rows AS row
CREATE (e:Entity)
SET e = row.props, e.seq = $seq
FOREACH (key IN row.props.keys |
  CREATE (:EntityKey {key: key, tenant_key: e.tenant_key, user_id: e.user_id,
                      agent_id: e.agent_id, run_id: e.run_id})-[:KEY_OF]->(e))
WITH e, row
WHERE row.embedding IS NOT NULL
CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding);

// One row per entity (Python merges a plan's updates of one entity). The reduce keeps the
// first occurrence of every name, like dict.fromkeys; reading e.aliases on the right-hand
// side of SET makes Cypher lock the node first, so concurrent updates are not lost.
// Keys new to the entity get their :EntityKey (the plan's tenant lock keeps two writers from
// adding the same key at once; a duplicate would only be read once anyway).
// name: update_aliases
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
SET e.aliases = reduce(acc = [], a IN coalesce(e.aliases, []) + row.aliases |
                       CASE WHEN a IN acc THEN acc ELSE acc + a END),
    e.updated_at = $updated_at
WITH e, row, coalesce(e.keys, []) AS had
SET e.keys = reduce(acc = [], k IN had + row.keys | CASE WHEN k IN acc THEN acc ELSE acc + k END)
FOREACH (key IN [k IN e.keys WHERE NOT k IN had] |
  CREATE (:EntityKey {key: key, tenant_key: e.tenant_key, user_id: e.user_id,
                      agent_id: e.agent_id, run_id: e.run_id})-[:KEY_OF]->(e));

// name: create_relations
UNWIND $rows AS row
MATCH (s:Entity {id: row.source_id}), (d:Entity {id: row.destination_id})
CREATE (s)-[r:RELATES]->(d)
SET r = row.props
WITH r, row
WHERE row.embedding IS NOT NULL
CALL db.create.setRelationshipVectorProperty(r, 'embedding', row.embedding);

// name: invalidate_relations
UNWIND $rows AS row
MATCH ()-[r:RELATES {id: row.id}]->()
SET r.invalid_at = row.invalid_at,
    r.updated_at = $updated_at;

// Provenance is two parallel lists (properties cannot hold maps): episode_ids, as in the
// Cypher dump, and provenance_at with the matching timestamps.
// name: add_mentions
UNWIND $rows AS row
MATCH ()-[r:RELATES {id: row.id}]->()
SET r.mentions = coalesce(r.mentions, 1) + size(row.episode_ids),
    r.episode_ids = coalesce(r.episode_ids, []) + row.episode_ids,
    r.provenance_at = coalesce(r.provenance_at, []) + row.timestamps,
    r.updated_at = $updated_at;

// Last in a plan's transaction, when the writer keeps the plan log (graph_store.plan_log): the
// plan itself ($plan: WritePlan JSON, zlib-compressed), numbered by the tenant's turn, so that
// a client-held copy of the tenant (memory/copy.py) at an earlier plan number of the same
// epoch catches up by applying the plans since, instead of copying the tenant whole. Only the
// last $keep plans of a tenant are kept: older ones are deleted here, one seek.
// name: log_plan
CREATE (:PlanLog {tenant_key: $tenant_key, user_id: $user_id, agent_id: $agent_id,
                  run_id: $run_id, epoch: $epoch, seq: $seq, plan: $plan})
WITH 1 AS one
MATCH (old:PlanLog)
WHERE old.tenant_key = $tenant_key AND old.seq <= $seq - $keep
DETACH DELETE old;

// First in a retried plan transaction (the driver runs it again after a connection error,
// also one that came after the server had committed the earlier attempt): how many of the
// plans' episodes, each new id of its own tenant, are already there. All of them: the earlier
// attempt committed, and writing again would fail on taken ids or take the tenant's turn twice.
// name: committed_episodes
UNWIND $episodes AS ep
MATCH (e:Episode {id: ep.id})
WHERE e.tenant_key = ep.tenant_key
RETURN count(e) AS n;
