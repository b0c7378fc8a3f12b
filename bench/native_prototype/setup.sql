-- The prototype's tables beside Spool's migrated queue_messages.
-- mqn: the native candidate (int queue id, a bigint order key, fillfactor
-- 80 for HOT claims; the text message id stays unique per queue because
-- publish skips an id already stored).
-- mqu: the narrowest two-index row (a uuid id, no queue column), publish only.
DROP TABLE IF EXISTS mqn, mqu, floor_q, floor_alo;
CREATE TABLE mqn (
  queue_id int NOT NULL, seq bigint NOT NULL, id text NOT NULL, message_group_id text,
  receipt bigint, visible_at bigint NOT NULL, created_at bigint NOT NULL,
  receive_count int NOT NULL DEFAULT 0, payload text NOT NULL
) WITH (fillfactor = 80);
CREATE UNIQUE INDEX mqn_id ON mqn (queue_id, id);
CREATE INDEX mqn_seq ON mqn (queue_id, seq);
CREATE TABLE mqu (
  seq bigint NOT NULL, id uuid NOT NULL, message_group_id text, receipt bigint,
  visible_at bigint NOT NULL, created_at bigint NOT NULL, receive_count int NOT NULL DEFAULT 0,
  payload text NOT NULL
);
CREATE UNIQUE INDEX mqu_id ON mqu (id);
CREATE INDEX mqu_visible ON mqu (visible_at, seq);
CREATE TABLE floor_q (id bigserial PRIMARY KEY, payload text NOT NULL);
CREATE TABLE floor_alo (id bigserial PRIMARY KEY, vt timestamptz NOT NULL DEFAULT now(),
  reads integer NOT NULL DEFAULT 0, payload text NOT NULL);
CREATE INDEX floor_alo_vt_idx ON floor_alo (vt);
DROP SEQUENCE IF EXISTS proto_seq, proto_idgen;
CREATE SEQUENCE proto_seq CACHE 100;
CREATE SEQUENCE proto_idgen CACHE 100;
-- The rotated prototype: ten generation tables shaped like queue_messages
-- (its primary key and idx_queue_visible), and the head pointer.
DROP TABLE IF EXISTS rotated_head;
CREATE TABLE rotated_head (gen int NOT NULL);
DO $$ BEGIN
  FOR g IN 0..9 LOOP
    EXECUTE format('DROP TABLE IF EXISTS rotated_%s', g);
    EXECUTE format('CREATE TABLE rotated_%s (LIKE queue_messages INCLUDING DEFAULTS)', g);
    EXECUTE format('ALTER TABLE rotated_%s ADD PRIMARY KEY (queue_name, id)', g);
    EXECUTE format('CREATE INDEX ON rotated_%s (queue_name, visible_at, message_group_id)', g);
  END LOOP;
END $$;
