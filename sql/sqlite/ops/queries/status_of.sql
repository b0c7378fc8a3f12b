-- The status and dedup key of op ?1, read in the write transaction of cancel or retry.
SELECT status, dedup_key FROM {{ops}} WHERE id = ?1
