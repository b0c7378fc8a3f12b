-- Archive, after the archiver succeeded: delete exactly the selected rows,
-- re-checking their state. ?1 seqs (JSON array), ?2 state.
DELETE FROM {{t}} WHERE seq IN (SELECT value FROM json_each(?1)) AND state = ?2 RETURNING id
