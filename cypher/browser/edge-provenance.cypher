// The provenance of one edge: every episode (conversation turn) that stated it, with the
// messages, in the order the mentions came in. A table, one row per mention.
//
// Parameters: $edge_id is an edge's id, e.g. from the edge_id column of entity-history.cypher
// or recent-changes.cypher (or Memory.get_all(...).relations[i].id).
//
// Columns: mention counts from 1 (the first is the episode that created the edge); mentioned_at
// is the conversation time of the mention; messages is the episode's messages as stored, a JSON
// list of {role, name, content}. A row whose episode_time and messages are null names an episode
// that is not in the database (e.g. a dump loaded without its episodes).
:param edge_id => 'paste-an-edge-id-here';

MATCH (s:Entity)-[r:RELATES {id: $edge_id}]->(d:Entity)
UNWIND range(0, size(coalesce(r.episode_ids, [])) - 1) AS i
OPTIONAL MATCH (ep:Episode {id: r.episode_ids[i]})
RETURN s.name AS source,
       r.name AS relation,
       d.name AS destination,
       i + 1 AS mention,
       r.provenance_at[i] AS mentioned_at,
       r.episode_ids[i] AS episode_id,
       ep.timestamp AS episode_time,
       ep.messages AS messages
ORDER BY mention;
