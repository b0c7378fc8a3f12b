-- Writer with notify on: delivered only if the caller commits.
SELECT pg_notify($1, $2)
