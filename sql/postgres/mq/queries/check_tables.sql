-- Consumers check only that the tables exist (they never read the ledger).
SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL
