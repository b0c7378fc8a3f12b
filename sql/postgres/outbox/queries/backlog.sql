-- Backlog (§6.3): each count is answered by its partial index, never by a
-- scan of terminal history; age from created_at against database now.
SELECT (SELECT count(*) FROM {{t}} WHERE state = 'pending'),
       (SELECT count(*) FROM {{t}} WHERE state = 'leased'),
       (SELECT count(*) FROM {{t}} WHERE state = 'leased' AND leased_until <= clock_timestamp()),
       (SELECT count(*) FROM {{t}} WHERE state = 'dead'),
       US[(SELECT min(created_at) FROM {{t}} WHERE state = 'pending')],
       US[clock_timestamp()]
