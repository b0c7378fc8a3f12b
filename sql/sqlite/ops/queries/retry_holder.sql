-- The pending op (other than ?1) that holds the dedup key ?2.
SELECT id FROM {{ops}} WHERE dedup_key = ?2 AND status = 'pending' AND id <> ?1
