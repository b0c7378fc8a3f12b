-- The at-least-once floor (bench/run.sh): claim by UPDATE … SKIP LOCKED, then DELETE.
WITH claimed AS (UPDATE floor_alo SET vt = now() + interval '30 seconds', reads = reads + 1 WHERE id IN (SELECT id FROM floor_alo WHERE vt <= now() ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED) RETURNING id, payload) SELECT array_agg(id) AS ids FROM claimed \gset
DELETE FROM floor_alo WHERE id = ANY(:ids::bigint[]);
