-- Consumers check only that the tables exist (they never read the ledger).
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('queue_messages', 'queue_messages_failed')
