// A tenant's graph as it stands now: every current edge (no invalid_at) with its two entities,
// returned as paths so the Browser draws a graph. Oldest facts first, so the rows (and the
// Browser's layout) come in the same order every time.
//
// Parameters: the tenant is picked by $user_id; $agent_id and $run_id narrow it (null: any).
// $as_of null means "now"; set it to a datetime, e.g. datetime('2023-10-15T00:00:00Z'), to see
// the graph as it stood then (valid_from <= $as_of < invalid_at), like Memory.search(as_of=...).
//
// Browser set-up (once per Browser, see docs/neo4j-browser.md):
//   :style relationship.RELATES {caption: '{name}'}     captions edges with the relation name
//   and switch off "Connect result nodes" in the settings: otherwise the Browser also draws the
//   ended edges between these entities.
:param user_id => 'maya';
:param agent_id => null;
:param run_id => null;
:param as_of => null;

MATCH p = (s:Entity)-[r:RELATES]->(d:Entity)
WHERE r.user_id = $user_id
  AND ($agent_id IS NULL OR r.agent_id = $agent_id)
  AND ($run_id IS NULL OR r.run_id = $run_id)
  AND CASE
        WHEN $as_of IS NULL THEN r.invalid_at IS NULL
        ELSE (r.valid_from IS NULL OR r.valid_from <= $as_of)
             AND (r.invalid_at IS NULL OR r.invalid_at > $as_of)
      END
RETURN p
ORDER BY r.valid_from, r.written, r.pos, r.id;
