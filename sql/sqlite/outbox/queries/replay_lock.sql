-- Replay (§6.4) inside BEGIN IMMEDIATE: each requested row's state. ?1 ids (JSON array).
SELECT id, state FROM {{t}} WHERE id IN (SELECT value FROM json_each(?1))
