// What get_all, the dumps and the CLI read: a scope's whole graph. Reads properties the way
// `mem0g dump --format cypher` writes them too (Entity / RELATES {name}), so a dump loaded
// into Neo4j reads back through the store. `$embeddings` false leaves the vectors out (most
// of a big tenant's bytes; get_all and the dumps do not show them). An exact read (a backup's
// per-tenant reads) seeks the tenant key alone, like every anchor (read.cypher).

// name: snapshot_entities
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
RETURN e {.*, created_at: toString(e.created_at), updated_at: toString(e.updated_at),
          embedding: CASE WHEN $embeddings THEN e.embedding END} AS entity;

// name: snapshot_relations
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
  AND ($include_invalid
       OR ($as_of IS NULL AND r.invalid_at IS NULL)
       OR ($as_of IS NOT NULL
           AND (r.valid_from IS NULL OR r.valid_from <= $as_of)
           AND (r.invalid_at IS NULL OR r.invalid_at > $as_of)))
MATCH (s:Entity)-[r]->(d:Entity)
RETURN r {.*, source_id: s.id, destination_id: d.id, source_name: s.name,
          destination_name: d.name, valid_from: toString(r.valid_from),
          invalid_at: toString(r.invalid_at), created_at: toString(r.created_at),
          updated_at: toString(r.updated_at),
          provenance_at: [t IN coalesce(r.provenance_at, []) | toString(t)],
          embedding: CASE WHEN $embeddings THEN r.embedding END} AS relation;
