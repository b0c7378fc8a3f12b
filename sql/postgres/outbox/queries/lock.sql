-- Fenced transitions (outbox.md §4): lock the row by id first; "now" is
-- read only after this lock is granted, by the statement that follows. $1 id.
SELECT 1 FROM {{t}} WHERE id = $1 FOR UPDATE
