-- Least-privilege PostgreSQL roles for Spool (docs/SECURITY.md).
-- Copy, rename the roles and the schema to taste, add passwords or certificates
-- as your site requires, and run part 1 as a role with CREATEROLE, part 2 as
-- spool_owner after `spool migrate`. tests/postgres/roles_test.cpp runs this
-- very file and proves each role can do its job and cannot run DDL.

-- ==== part 1: roles and the schema (as a superuser or CREATEROLE) ====
CREATE ROLE spool_owner LOGIN;     -- runs `spool migrate`; owns every Spool object
CREATE ROLE spool_producer LOGIN;  -- publishes messages, enqueues ops, writes outbox envelopes
CREATE ROLE spool_consumer LOGIN;  -- consumes messages, runs ops (worker pools, `spool ops work`)
CREATE ROLE spool_relay LOGIN;     -- forwards the outbox (`spool relay`)
CREATE SCHEMA spool AUTHORIZATION spool_owner;
-- Spool resolves current_schema() when no schema is configured: point every
-- role at the schema (or set `schema` in each component's options instead).
ALTER ROLE spool_owner SET search_path = spool;
ALTER ROLE spool_producer SET search_path = spool;
ALTER ROLE spool_consumer SET search_path = spool;
ALTER ROLE spool_relay SET search_path = spool;
-- PostgreSQL 13 and 14 let every role create objects in schema public, and
-- every version lets every role create temporary tables: neither is work
-- any Spool role does. Revoke both from PUBLIC (harmless where already so);
-- grant TEMPORARY back to your application's roles that need it.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
DO $revoke$ BEGIN
  EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
END $revoke$;

-- ==== part 2: grants (as spool_owner, after `spool migrate`) ====
GRANT USAGE ON SCHEMA spool TO spool_producer, spool_consumer, spool_relay;
-- Every driver checks the schema version it runs against.
GRANT SELECT ON spool.spool_schema_migrations TO spool_producer, spool_consumer, spool_relay;

-- Message queue. A producer only inserts (duplicates are detected by the
-- primary key, read back for already_present); a consumer claims (UPDATE),
-- acks (DELETE) and quarantines poison rows into the failed table (an upsert:
-- the latest failure of an id wins).
GRANT SELECT, INSERT ON spool.queue_messages TO spool_producer;
GRANT SELECT, UPDATE, DELETE ON spool.queue_messages TO spool_consumer;
GRANT SELECT, INSERT, UPDATE ON spool.queue_messages_failed TO spool_consumer;

-- Op queue. Enqueue returns the id and resolves dedup holders (SELECT).
GRANT SELECT, INSERT ON spool.ops_queue TO spool_producer;
GRANT SELECT, UPDATE ON spool.ops_queue TO spool_consumer;

-- Outbox. The writer inserts inside the application's transaction; the relay
-- leases and finishes rows. Replay, prune and archive are operator tasks: run
-- them as spool_owner (or grant UPDATE/DELETE and the audit table to an
-- operator role).
GRANT SELECT, INSERT ON spool.outbox_messages TO spool_producer;
GRANT SELECT, UPDATE ON spool.outbox_messages TO spool_relay;
-- The relay's mq sink (`spool relay --sink mq:QUEUE`) publishes into the
-- queue table inside its delivery transaction (reading back already_present).
GRANT SELECT, INSERT ON spool.queue_messages TO spool_relay;
