-- Archive (§6.5), after the archiver succeeded: delete exactly the selected
-- rows, re-checking their state. $1 seqs (text[]), $2 state.
DELETE FROM {{t}} WHERE seq = ANY($1::bigint[]) AND state = $2 RETURNING id
