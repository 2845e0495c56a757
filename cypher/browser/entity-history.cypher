// An entity's full history: every edge at it, in either direction, current and ended
// (invalidated edges are never deleted), oldest first. A table, one row per edge.
//
// Parameters: $name is matched case-insensitively against the entity's name and its aliases
// (in the demo, 'sam okafor' finds the entity "Sam", which took that name as an alias). The
// tenant is picked by $user_id; $agent_id and $run_id narrow it (null: any).
//
// Columns: valid_from / invalid_at are conversation time (when the fact started and stopped
// being true); recorded_at is when mem0g wrote the edge. status is 'current' or 'ended'.
// edge_id goes into edge-provenance.cypher.
:param user_id => 'maya';
:param agent_id => null;
:param run_id => null;
:param name => 'Maya';

MATCH (e:Entity)
WHERE e.user_id = $user_id
  AND ($agent_id IS NULL OR e.agent_id = $agent_id)
  AND ($run_id IS NULL OR e.run_id = $run_id)
  AND (toLower(e.name) = toLower($name)
       OR any(alias IN coalesce(e.aliases, []) WHERE toLower(alias) = toLower($name)))
MATCH (e)-[r:RELATES]-(:Entity)
WITH e, r, startNode(r) AS s, endNode(r) AS d
RETURN e.name AS entity,
       s.name AS source,
       r.name AS relation,
       d.name AS destination,
       CASE WHEN r.invalid_at IS NULL THEN 'current' ELSE 'ended' END AS status,
       r.valid_from AS valid_from,
       r.invalid_at AS invalid_at,
       r.mentions AS mentions,
       r.created_at AS recorded_at,
       r.id AS edge_id
ORDER BY entity, e.id, coalesce(r.valid_from, r.created_at), r.written, r.pos, r.id;
