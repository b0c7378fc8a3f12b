-- Backlog (§6.3): each count from its partial index. ?1 now µs.
SELECT (SELECT count(*) FROM {{t}} WHERE state = 'pending'),
       (SELECT count(*) FROM {{t}} WHERE state = 'leased'),
       (SELECT count(*) FROM {{t}} WHERE state = 'leased' AND leased_until <= ?1),
       (SELECT count(*) FROM {{t}} WHERE state = 'dead'),
       (SELECT min(created_at) FROM {{t}} WHERE state = 'pending'),
       ?1
