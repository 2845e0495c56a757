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
