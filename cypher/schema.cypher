// mem0g schema for Neo4j 5.26+ (Community is enough). Applied on a store's first use when the
// database lacks part of it (schema_objects below); every statement is idempotent
// (IF NOT EXISTS), so concurrent or repeated stores agree.
// Data model, shared with `mem0g dump --format cypher`:
//   (:Entity {id, name, type, aliases, keys, embedding, ...})
//   (:EntityKey {key, tenant_key, user_id, agent_id, run_id})-[:KEY_OF]->(:Entity)
//       one per normalised name/alias key of an entity (e.keys stays the record): Neo4j
//       cannot index the elements of a list, so find_entities seeks these instead of
//       reading every entity of the tenant
//   (:Entity)-[:RELATES {id, name: <relation>, valid_from, invalid_at, ...}]->(:Entity)
//   (:Episode {id, messages: <JSON>, message_count, timestamp, seq, ...})
// and the fact memory beside the graph (cypher/facts.cypher):
//   (:Fact {id, text, embedding, episode_ids, provenance_at, ...})   current facts only
//   (:FactEvent {id, fact_id, event, old_text, new_text, actor, ...}) kept after a delete
//   (:Summary {text, messages_covered, updated_at})                   one per tenant_key
//   (:TenantSequence {seq})  one per tenant_key: numbers its plans in commit order, and the
//                            lock that makes a tenant's writers take turns (write.cypher);
//                            also the sum of its facts' unit vectors, fact_vector_sum,
//                            their number, fact_vectors, and the number of its facts,
//                            fact_count (facts.cypher, add_fact_vectors)
//   (:PlanLog {tenant_key, epoch, seq, plan})  the plans a tenant's writers wrote, as
//                            zlib-compressed WritePlan JSON, its last few only, for the
//                            client-held copies of other clients to catch up by
//                            (graph_store.plan_log; write.cypher, log_plan)
// Every node and relationship carries user_id/agent_id/run_id and tenant_key (Tenant.key).

// name: constraint_entity_id
CREATE CONSTRAINT mem0g_entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE;

// name: constraint_episode_id
CREATE CONSTRAINT mem0g_episode_id IF NOT EXISTS FOR (ep:Episode) REQUIRE ep.id IS UNIQUE;

// Relationship property uniqueness constraints exist in Community since 5.7.
// name: constraint_relation_id
CREATE CONSTRAINT mem0g_relation_id IF NOT EXISTS FOR ()-[r:RELATES]-() REQUIRE r.id IS UNIQUE;

// name: constraint_fact_id
CREATE CONSTRAINT mem0g_fact_id IF NOT EXISTS FOR (f:Fact) REQUIRE f.id IS UNIQUE;

// name: constraint_fact_event_id
CREATE CONSTRAINT mem0g_fact_event_id IF NOT EXISTS FOR (ev:FactEvent) REQUIRE ev.id IS UNIQUE;

// One summary per exact tenant: set_summary MERGEs on it, safely under concurrency.
// name: constraint_summary_tenant_key
CREATE CONSTRAINT mem0g_summary_tenant_key IF NOT EXISTS
FOR (s:Summary) REQUIRE s.tenant_key IS UNIQUE;

// One rebuild marker per index kind (see mark_rebuild): MERGE on it seeks, and is safe when
// two stores rebuild at once.
// name: constraint_rebuild_kind
CREATE CONSTRAINT mem0g_rebuild_kind IF NOT EXISTS FOR (m:Mem0gRebuild) REQUIRE m.kind IS UNIQUE;

// name: constraint_tenant_sequence_tenant_key
CREATE CONSTRAINT mem0g_tenant_sequence_tenant_key IF NOT EXISTS
FOR (q:TenantSequence) REQUIRE q.tenant_key IS UNIQUE;

// Range indexes behind every tenant-scoped scan (see the anchored unions in read.cypher).
// The entities a tenant's plans wrote after a given plan number (entity_vectors_since).
// name: index_entity_tenant_seq
CREATE INDEX mem0g_entity_tenant_seq IF NOT EXISTS FOR (e:Entity) ON (e.tenant_key, e.seq);

// The plans a tenant's writers logged after a given plan number (plan_log_since), and the
// ones past the kept window (log_plan).
// name: index_plan_log_tenant_seq
CREATE INDEX mem0g_plan_log_tenant_seq IF NOT EXISTS FOR (p:PlanLog) ON (p.tenant_key, p.seq);

// name: index_entity_key_tenant_key
CREATE INDEX mem0g_entity_key_tenant_key IF NOT EXISTS FOR (k:EntityKey) ON (k.tenant_key, k.key);

// name: index_entity_key_user_id
CREATE INDEX mem0g_entity_key_user_id IF NOT EXISTS FOR (k:EntityKey) ON (k.user_id, k.key);

// name: index_entity_key_agent_id
CREATE INDEX mem0g_entity_key_agent_id IF NOT EXISTS FOR (k:EntityKey) ON (k.agent_id, k.key);

// name: index_entity_key_run_id
CREATE INDEX mem0g_entity_key_run_id IF NOT EXISTS FOR (k:EntityKey) ON (k.run_id, k.key);

// name: index_entity_tenant_key
CREATE INDEX mem0g_entity_tenant_key IF NOT EXISTS FOR (e:Entity) ON (e.tenant_key);

// name: index_entity_user_id
CREATE INDEX mem0g_entity_user_id IF NOT EXISTS FOR (e:Entity) ON (e.user_id);

// name: index_entity_agent_id
CREATE INDEX mem0g_entity_agent_id IF NOT EXISTS FOR (e:Entity) ON (e.agent_id);

// name: index_entity_run_id
CREATE INDEX mem0g_entity_run_id IF NOT EXISTS FOR (e:Entity) ON (e.run_id);

// name: index_relation_tenant_key
CREATE INDEX mem0g_relation_tenant_key IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.tenant_key);

// name: index_relation_user_id
CREATE INDEX mem0g_relation_user_id IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.user_id);

// name: index_relation_agent_id
CREATE INDEX mem0g_relation_agent_id IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.agent_id);

// name: index_relation_run_id
CREATE INDEX mem0g_relation_run_id IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.run_id);

// Lets stats() count ended facts without reading every relationship.
// name: index_relation_invalid_at
CREATE INDEX mem0g_relation_invalid_at IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.invalid_at);

// name: index_episode_tenant_key
CREATE INDEX mem0g_episode_tenant_key IF NOT EXISTS FOR (ep:Episode) ON (ep.tenant_key);

// name: index_episode_user_id
CREATE INDEX mem0g_episode_user_id IF NOT EXISTS FOR (ep:Episode) ON (ep.user_id);

// name: index_episode_agent_id
CREATE INDEX mem0g_episode_agent_id IF NOT EXISTS FOR (ep:Episode) ON (ep.agent_id);

// name: index_episode_run_id
CREATE INDEX mem0g_episode_run_id IF NOT EXISTS FOR (ep:Episode) ON (ep.run_id);

// name: index_fact_tenant_key
CREATE INDEX mem0g_fact_tenant_key IF NOT EXISTS FOR (f:Fact) ON (f.tenant_key);

// name: index_fact_user_id
CREATE INDEX mem0g_fact_user_id IF NOT EXISTS FOR (f:Fact) ON (f.user_id);

// name: index_fact_agent_id
CREATE INDEX mem0g_fact_agent_id IF NOT EXISTS FOR (f:Fact) ON (f.agent_id);

// name: index_fact_run_id
CREATE INDEX mem0g_fact_run_id IF NOT EXISTS FOR (f:Fact) ON (f.run_id);

// name: index_fact_event_tenant_key
CREATE INDEX mem0g_fact_event_tenant_key IF NOT EXISTS FOR (ev:FactEvent) ON (ev.tenant_key);

// name: index_fact_event_user_id
CREATE INDEX mem0g_fact_event_user_id IF NOT EXISTS FOR (ev:FactEvent) ON (ev.user_id);

// name: index_fact_event_agent_id
CREATE INDEX mem0g_fact_event_agent_id IF NOT EXISTS FOR (ev:FactEvent) ON (ev.agent_id);

// name: index_fact_event_run_id
CREATE INDEX mem0g_fact_event_run_id IF NOT EXISTS FOR (ev:FactEvent) ON (ev.run_id);

// A fact's history, read (and its id checked for reuse) by fact id.
// name: index_fact_event_fact_id
CREATE INDEX mem0g_fact_event_fact_id IF NOT EXISTS FOR (ev:FactEvent) ON (ev.fact_id);

// name: index_summary_user_id
CREATE INDEX mem0g_summary_user_id IF NOT EXISTS FOR (s:Summary) ON (s.user_id);

// name: index_summary_agent_id
CREATE INDEX mem0g_summary_agent_id IF NOT EXISTS FOR (s:Summary) ON (s.agent_id);

// name: index_summary_run_id
CREATE INDEX mem0g_summary_run_id IF NOT EXISTS FOR (s:Summary) ON (s.run_id);

// name: index_tenant_sequence_user_id
CREATE INDEX mem0g_tenant_sequence_user_id IF NOT EXISTS FOR (q:TenantSequence) ON (q.user_id);

// name: index_tenant_sequence_agent_id
CREATE INDEX mem0g_tenant_sequence_agent_id IF NOT EXISTS
FOR (q:TenantSequence) ON (q.agent_id);

// name: index_tenant_sequence_run_id
CREATE INDEX mem0g_tenant_sequence_run_id IF NOT EXISTS FOR (q:TenantSequence) ON (q.run_id);

// A user's run: the scope anchors seek these when both ids are given (rows._seek), not the
// user's whole range of the user_id index (one run of a user of 4,000 runs read all 4,000).
// name: index_entity_user_run
CREATE INDEX mem0g_entity_user_run IF NOT EXISTS
FOR (e:Entity) ON (e.user_id, e.run_id);

// name: index_relation_user_run
CREATE INDEX mem0g_relation_user_run IF NOT EXISTS
FOR ()-[r:RELATES]-() ON (r.user_id, r.run_id);

// name: index_episode_user_run
CREATE INDEX mem0g_episode_user_run IF NOT EXISTS
FOR (ep:Episode) ON (ep.user_id, ep.run_id);

// name: index_fact_user_run
CREATE INDEX mem0g_fact_user_run IF NOT EXISTS
FOR (f:Fact) ON (f.user_id, f.run_id);

// name: index_fact_event_user_run
CREATE INDEX mem0g_fact_event_user_run IF NOT EXISTS
FOR (ev:FactEvent) ON (ev.user_id, ev.run_id);

// name: index_summary_user_run
CREATE INDEX mem0g_summary_user_run IF NOT EXISTS
FOR (s:Summary) ON (s.user_id, s.run_id);

// name: index_tenant_sequence_user_run
CREATE INDEX mem0g_tenant_sequence_user_run IF NOT EXISTS
FOR (q:TenantSequence) ON (q.user_id, q.run_id);

// Vector indexes: the dimension and similarity arrive as the $options parameter
// ({indexConfig: {`vector.dimensions`: <int>, `vector.similarity_function`: 'cosine', ...}}),
// so no number is ever formatted into the statement.
// name: vector_index_entities
CREATE VECTOR INDEX mem0g_entity_embedding IF NOT EXISTS
FOR (e:Entity) ON e.embedding
OPTIONS $options;

// name: vector_index_relations
CREATE VECTOR INDEX mem0g_relation_embedding IF NOT EXISTS
FOR ()-[r:RELATES]-() ON r.embedding
OPTIONS $options;

// name: vector_index_facts
CREATE VECTOR INDEX mem0g_fact_embedding IF NOT EXISTS
FOR (f:Fact) ON f.embedding
OPTIONS $options;

// name: vector_index_dims
SHOW VECTOR INDEXES YIELD name, options
WHERE name IN ['mem0g_entity_embedding', 'mem0g_relation_embedding', 'mem0g_fact_embedding']
RETURN name, options.indexConfig['vector.dimensions'] AS dims;

// An index of another size may only be replaced while no embedding is stored.
// name: stored_embeddings
RETURN EXISTS { MATCH (e:Entity) WHERE e.embedding IS NOT NULL }
    OR EXISTS { MATCH ()-[r:RELATES]->() WHERE r.embedding IS NOT NULL }
    OR EXISTS { MATCH (f:Fact) WHERE f.embedding IS NOT NULL } AS found;

// name: drop_vector_index_entities
DROP INDEX mem0g_entity_embedding IF EXISTS;

// name: drop_vector_index_relations
DROP INDEX mem0g_relation_embedding IF EXISTS;

// name: drop_vector_index_facts
DROP INDEX mem0g_fact_embedding IF EXISTS;

// name: await_indexes
CALL db.awaitIndexes($seconds);

// Rebuilding a vector index (Neo4jGraphStore.rebuild_vector_indexes): while it populates, a
// query on it blocks for 30 s and then fails, so the rebuilding store first leaves a
// (:Mem0gRebuild {kind, until}) marker, one per index kind, on a lease it renews while it
// waits. Every store reads the live markers at most once per index_check_interval and
// answers that kind's searches by the exact tenant scan meanwhile; a rebuild that dies
// leaves a marker that lapses at `until`.
// name: mark_rebuild
MERGE (m:Mem0gRebuild {kind: $kind})
SET m.until = datetime() + duration({seconds: $lease});

// name: clear_rebuild
MATCH (m:Mem0gRebuild {kind: $kind})
DELETE m;

// name: rebuilding_kinds
OPTIONAL MATCH (m:Mem0gRebuild)
WHERE m.until > datetime()
RETURN collect(DISTINCT m.kind) AS kinds;

// name: vector_index_states
SHOW VECTOR INDEXES YIELD name, state, populationPercent, failureMessage
WHERE name IN ['mem0g_entity_embedding', 'mem0g_relation_embedding', 'mem0g_fact_embedding']
RETURN name, state, populationPercent AS percent, failureMessage AS failure;

// The data layout version lives in one (:Mem0gSchema {version}) node. Version 2 added the
// (:EntityKey) lookup nodes: a store that finds a lower version (a database written by an
// earlier mem0g) gives every entity its key nodes once, in batches, then records version 2.
// name: schema_version
OPTIONAL MATCH (m:Mem0gSchema)
RETURN max(m.version) AS version;

// What the database holds of mem0g's schema, read by every store before it would apply the
// DDL above (mem0g/stores/neo4j/schema_check.py): one read instead of ~60 schema statements.
// A uniqueness constraint shows as the index it owns.
// name: schema_objects
SHOW INDEXES YIELD name, state, owningConstraint, options
WHERE name STARTS WITH 'mem0g_'
RETURN name, state, owningConstraint AS constraint,
       options.indexConfig['vector.dimensions'] AS dims;

// name: backfill_entity_keys
MATCH (e:Entity)
WHERE size(coalesce(e.keys, [])) > 0 AND NOT EXISTS { (e)<-[:KEY_OF]-(:EntityKey) }
CALL (e) {
  FOREACH (key IN e.keys |
    CREATE (:EntityKey {key: key, tenant_key: e.tenant_key, user_id: e.user_id,
                        agent_id: e.agent_id, run_id: e.run_id})-[:KEY_OF]->(e))
} IN TRANSACTIONS OF $batch ROWS;

// name: set_schema_version
MERGE (m:Mem0gSchema)
SET m.version = $version;

// Version 4 gives each edge its write order as one sortable string, `ord` (plan_rows.py,
// write_order: written and pos zero-padded to 19 and 9 digits, then the id), which the reads
// sort by instead of (written, pos, created_at, id). Edges written before it get theirs here,
// $batch per transaction; an edge lacking written or pos (never written by mem0g) sorts
// after the others, as a null did. Idempotent: only edges without the key are touched.
// name: backfill_relation_order
MATCH ()-[r:RELATES]->()
WHERE r.ord IS NULL
CALL (r) {
  SET r.ord = right('0000000000000000000' + coalesce(toString(r.written), '9999999999999999999'), 19)
              + right('000000000' + coalesce(toString(r.pos), '999999999'), 9)
              + coalesce(r.id, '')
} IN TRANSACTIONS OF $batch ROWS;

// Version 3 scopes the full-text indexes (lexical.cypher): indexes made before it lack
// `lex_scope` and are dropped and made again; rows written before it get their scope terms,
// a chunk of tenants ($groups: the ids and the terms Python computed) per call, committed
// $batch rows at a time. Idempotent: only rows without terms are touched. The scans find the
// tenants; the sets seek by the id indexes. (Kept here, not in lexical.cypher: the warm-up
// runs that file's read statements.)
// name: show_fulltext_indexes
SHOW FULLTEXT INDEXES YIELD name, properties
WHERE name IN ['mem0g_fact_words', 'mem0g_relation_text', 'mem0g_entity_text']
RETURN name, properties;

// name: drop_fulltext_index_facts
DROP INDEX mem0g_fact_words IF EXISTS;

// name: drop_fulltext_index_relations
DROP INDEX mem0g_relation_text IF EXISTS;

// name: drop_fulltext_index_entities
DROP INDEX mem0g_entity_text IF EXISTS;

// name: scope_terms_missing_facts
MATCH (f:Fact)
WHERE f.lex_scope IS NULL
RETURN f.user_id AS user_id, f.agent_id AS agent_id, f.run_id AS run_id, count(*) AS rows;

// name: scope_terms_missing_entities
MATCH (e:Entity)
WHERE e.lex_scope IS NULL
RETURN e.user_id AS user_id, e.agent_id AS agent_id, e.run_id AS run_id, count(*) AS rows;

// name: scope_terms_missing_relations
MATCH ()-[r:RELATES]->()
WHERE r.lex_scope IS NULL
RETURN r.user_id AS user_id, r.agent_id AS agent_id, r.run_id AS run_id, count(*) AS rows;

// name: backfill_scope_terms_facts
UNWIND $groups AS g
CALL (g) {
  MATCH (f:Fact) WHERE f.user_id = g.user_id RETURN f
  UNION
  MATCH (f:Fact) WHERE g.user_id IS NULL AND f.agent_id = g.agent_id RETURN f
  UNION
  MATCH (f:Fact) WHERE g.user_id IS NULL AND g.agent_id IS NULL AND f.run_id = g.run_id
  RETURN f
}
WITH g, f
WHERE f.lex_scope IS NULL
  AND (f.user_id = g.user_id OR (f.user_id IS NULL AND g.user_id IS NULL))
  AND (f.agent_id = g.agent_id OR (f.agent_id IS NULL AND g.agent_id IS NULL))
  AND (f.run_id = g.run_id OR (f.run_id IS NULL AND g.run_id IS NULL))
CALL (f, g) {
  SET f.lex_scope = g.terms
} IN TRANSACTIONS OF $batch ROWS;

// name: backfill_scope_terms_entities
UNWIND $groups AS g
CALL (g) {
  MATCH (e:Entity) WHERE e.user_id = g.user_id RETURN e
  UNION
  MATCH (e:Entity) WHERE g.user_id IS NULL AND e.agent_id = g.agent_id RETURN e
  UNION
  MATCH (e:Entity) WHERE g.user_id IS NULL AND g.agent_id IS NULL AND e.run_id = g.run_id
  RETURN e
}
WITH g, e
WHERE e.lex_scope IS NULL
  AND (e.user_id = g.user_id OR (e.user_id IS NULL AND g.user_id IS NULL))
  AND (e.agent_id = g.agent_id OR (e.agent_id IS NULL AND g.agent_id IS NULL))
  AND (e.run_id = g.run_id OR (e.run_id IS NULL AND g.run_id IS NULL))
CALL (e, g) {
  SET e.lex_scope = g.terms
} IN TRANSACTIONS OF $batch ROWS;

// name: backfill_scope_terms_relations
UNWIND $groups AS g
CALL (g) {
  MATCH ()-[r:RELATES]->() WHERE r.user_id = g.user_id RETURN r
  UNION
  MATCH ()-[r:RELATES]->() WHERE g.user_id IS NULL AND r.agent_id = g.agent_id RETURN r
  UNION
  MATCH ()-[r:RELATES]->()
  WHERE g.user_id IS NULL AND g.agent_id IS NULL AND r.run_id = g.run_id
  RETURN r
}
WITH g, r
WHERE r.lex_scope IS NULL
  AND (r.user_id = g.user_id OR (r.user_id IS NULL AND g.user_id IS NULL))
  AND (r.agent_id = g.agent_id OR (r.agent_id IS NULL AND g.agent_id IS NULL))
  AND (r.run_id = g.run_id OR (r.run_id IS NULL AND g.run_id IS NULL))
CALL (r, g) {
  SET r.lex_scope = g.terms
} IN TRANSACTIONS OF $batch ROWS;

// Schema v5 (indexes.py, _sum_fact_vectors): each tenant's fact vector sum (facts.cypher,
// add_fact_vectors) set whole, from its facts, in one transaction per tenant that takes the
// tenant's lock with its first statement, so a plan written meanwhile waits, then adds to it.
// Schema v6 runs the same to set each tenant's fact count too.
// name: lock_fact_vectors
MATCH (q:TenantSequence {tenant_key: $tenant_key})
SET q.fact_vectors = null, q.fact_vector_sum = null, q.fact_count = null
RETURN q.tenant_key AS key;

// Every fact of the tenant: its embedding, null for a fact without one.
// name: tenant_fact_embeddings
MATCH (f:Fact)
WHERE f.tenant_key = $tenant_key
RETURN f.embedding AS embedding;

// name: set_fact_vectors
MATCH (q:TenantSequence {tenant_key: $tenant_key})
SET q.fact_vectors = $count, q.fact_vector_sum = $total, q.fact_count = $facts;

// name: fact_tenant_keys
MATCH (f:Fact) WHERE f.tenant_key IS NOT NULL
RETURN DISTINCT f.tenant_key AS key;

// Schema v7 indexes a fact's letter-run words (`lex_text`, lexical_query.indexed_words), not
// its text, under a new name (lexical.cypher, mem0g_fact_words): the old index is dropped, and
// facts written before it get their words, a page of ids at a time in id order (the id
// constraint's index: no scan of what is done), the words computed in Python.
// name: drop_fulltext_index_fact_text
DROP INDEX mem0g_fact_text IF EXISTS;

// name: facts_without_words
MATCH (f:Fact)
WHERE f.id > $after
WITH f ORDER BY f.id
LIMIT $batch
RETURN f.id AS id, f.text AS text, f.lex_text IS NULL AS missing;

// name: set_fact_words
UNWIND $rows AS row
MATCH (f:Fact {id: row.id})
WHERE f.lex_text IS NULL AND f.text = row.text
SET f.lex_text = row.words;
