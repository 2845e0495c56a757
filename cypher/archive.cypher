// Reads of `mem0g export` (mem0g/stores/archive_reads.py): what the everyday reads do not
// return. Parameters only; one exact tenant per call.

// Every fact event of the exact tenant, deleted facts' included, in write order.
// name: archive_fact_events
MATCH (ev:FactEvent)
WHERE ev.tenant_key = $tenant_key
RETURN ev {.*} AS event
ORDER BY ev.seq, ev.pos, ev.written, ev.id;

// Every entity event of the exact tenant (merges with their undo records, splits, renames),
// in write order, so a restored merge can still be split.
// name: archive_entity_events
MATCH (ev:EntityEvent)
WHERE ev.tenant_key = $tenant_key
RETURN ev.data AS data
ORDER BY ev.seq, ev.written, ev.pos, ev.id;

// Everything of the exact tenant in one round trip (archive_reads.tenant_records): what
// snapshot_entities, snapshot_relations, episodes, facts, possible_duplicates, the two reads
// above and get_summary return for an exact tenant, each in their order. Eight reads a
// tenant cost the client about 1 ms of driver work each, which was most of an export of many
// small tenants. Each part is a CALL that aggregates, so an empty part is an empty list.
// The parts are collected in the server's heap, where the separate reads stream: a tenant
// of more than $most entities, edges, episodes and fact events returns no row, and is read
// by the separate reads.
// name: archive_tenant
CALL () {
  MATCH (e:Entity) WHERE e.tenant_key = $tenant_key RETURN count(e) AS entity_count
}
CALL () {
  MATCH ()-[r:RELATES]->() WHERE r.tenant_key = $tenant_key RETURN count(r) AS relation_count
}
CALL () {
  MATCH (ep:Episode) WHERE ep.tenant_key = $tenant_key RETURN count(ep) AS episode_count
}
CALL () {
  MATCH (ev:FactEvent) WHERE ev.tenant_key = $tenant_key RETURN count(ev) AS event_count
}
WITH entity_count + relation_count + episode_count + event_count AS records
WHERE records <= $most
CALL () {
  MATCH (e:Entity) WHERE e.tenant_key = $tenant_key
  RETURN collect(e {.*, created_at: toString(e.created_at), updated_at: toString(e.updated_at),
                    embedding: CASE WHEN $embeddings THEN e.embedding END}) AS entities
}
CALL () {
  MATCH (s:Entity)-[r:RELATES]->(d:Entity)
  USING INDEX r:RELATES(tenant_key)  // else the planner scans every Entity and expands
  WHERE r.tenant_key = $tenant_key
  RETURN collect(r {.*, source_id: s.id, destination_id: d.id, source_name: s.name,
                    destination_name: d.name, valid_from: toString(r.valid_from),
                    invalid_at: toString(r.invalid_at), created_at: toString(r.created_at),
                    updated_at: toString(r.updated_at),
                    provenance_at: [t IN coalesce(r.provenance_at, []) | toString(t)],
                    embedding: CASE WHEN $embeddings THEN r.embedding END}) AS relations
}
CALL () {
  MATCH (ep:Episode) WHERE ep.tenant_key = $tenant_key
  WITH ep ORDER BY ep.written, ep.created_at, ep.id
  RETURN collect(ep {.*}) AS episodes
}
CALL () {
  MATCH (f:Fact) WHERE f.tenant_key = $tenant_key
  WITH f ORDER BY f.created_at, f.written, f.seq, f.pos, f.id
  RETURN collect(f {.*, created_at: toString(f.created_at), updated_at: toString(f.updated_at),
                    provenance_at: [t IN coalesce(f.provenance_at, []) | toString(t)]}) AS facts
}
CALL () {
  MATCH (p:PossibleDuplicate) WHERE p.tenant_key = $tenant_key
    AND EXISTS { MATCH (e:Entity {id: p.entity_id}) WHERE e.tenant_key = p.tenant_key }
    AND EXISTS { MATCH (c:Entity {id: p.candidate_id}) WHERE c.tenant_key = p.tenant_key }
  WITH p ORDER BY p.written, p.pos
  RETURN collect(p.data) AS duplicates
}
CALL () {
  MATCH (ev:FactEvent) WHERE ev.tenant_key = $tenant_key
  WITH ev ORDER BY ev.seq, ev.pos, ev.written, ev.id
  RETURN collect(ev {.*}) AS fact_events
}
CALL () {
  MATCH (ev:EntityEvent) WHERE ev.tenant_key = $tenant_key
  WITH ev ORDER BY ev.seq, ev.written, ev.pos, ev.id
  RETURN collect(ev.data) AS entity_events
}
CALL () {
  OPTIONAL MATCH (s:Summary {tenant_key: $tenant_key})
  RETURN s {.*} AS summary
}
RETURN entities, relations, episodes, facts, duplicates, fact_events, entity_events, summary;
