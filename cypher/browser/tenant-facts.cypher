// A tenant's facts (the Mem0 memories kept beside the graph) and their history: one row per
// event (ADD, UPDATE, DELETE), grouped by fact, the facts in the order they were learned.
// A deleted fact's node is gone but its events stay, so it is listed with status 'deleted'.
//
// Parameters: the tenant is picked by $user_id; $agent_id and $run_id narrow it (null: any).
//
// Columns: text is the fact's current text (null once deleted); old_text -> new_text is what
// the event changed; said_at is the conversation time of the episode that caused it (null for
// an edit by hand); at is when mem0g wrote the event.
:param user_id => 'maya';
:param agent_id => null;
:param run_id => null;

CALL () {
  MATCH (f:Fact)
  WHERE f.user_id = $user_id
    AND ($agent_id IS NULL OR f.agent_id = $agent_id)
    AND ($run_id IS NULL OR f.run_id = $run_id)
  RETURN f.id AS fact_id
  UNION
  MATCH (ev:FactEvent)
  WHERE ev.user_id = $user_id
    AND ($agent_id IS NULL OR ev.agent_id = $agent_id)
    AND ($run_id IS NULL OR ev.run_id = $run_id)
  RETURN ev.fact_id AS fact_id
}
OPTIONAL MATCH (f:Fact {id: fact_id})
OPTIONAL MATCH (ev:FactEvent {fact_id: fact_id})
WITH fact_id, f, ev
ORDER BY ev.seq, ev.pos, ev.written, ev.id
WITH fact_id, f, collect(ev) AS events
WITH fact_id, f, events, CASE WHEN events = [] THEN [null] ELSE events END AS rows
UNWIND range(0, size(rows) - 1) AS i
WITH fact_id, f, events, i, rows[i] AS ev
OPTIONAL MATCH (ep:Episode {id: ev.episode_id})
RETURN fact_id,
       CASE WHEN f IS NULL THEN 'deleted' ELSE 'current' END AS status,
       f.text AS text,
       ev.event AS event,
       ev.old_text AS old_text,
       ev.new_text AS new_text,
       ep.timestamp AS said_at,
       ev.at AS at
ORDER BY coalesce(events[0].written, f.written), coalesce(events[0].pos, f.pos), fact_id, i;
