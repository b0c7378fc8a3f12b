// Released migrations are never edited: their SHA-256 is pinned here. A new
// schema change is a new numbered file (DESIGN.md, Migrations).
#include <gtest/gtest.h>

#include <map>

#include "migrate/migration_files.hpp"
#include "spool/error.hpp"

namespace spool::detail {

TEST(migration_files, released_migrations_keep_their_checksums) {
  const std::map<std::string, std::string> pinned = {
      {"postgres:mq/1", "a33f486e1dc91747683519c652048c56f97c87c977d25d4219e299125d9bc497"},
      {"postgres:mq/2", "11ed101ed54758a155dacf9e1b6530484a253ee36fc31afc3d703069071d69a0"},
      {"postgres:mq/3", "bb85ca8017f4b1b5b363bd9c59f54fdbfbc935ecb5515b2f6855cbaa47ac5c17"},
      {"sqlite:mq/1", "505c8056672d0ccc832417ee4862a04dfe739e89e7fceb6e737829a85334de02"},
      {"sqlite:mq/2", "79f70d330d83c82cd2557c642f5843e5f4de91a01e0995716bc403ea4c8fdf6b"},
      {"sqlite:mq/3", "a1e209a032996dc08d06d8c9fa5b8bfcfb4e516511b25bd6d5daa80fbe9da4eb"},
  };
  std::size_t seen = 0;
  for (const auto kind : {engine::postgres, engine::sqlite}) {
    for (const auto& m : migration_files(kind, "mq")) {
      const std::string key =
          std::string(kind == engine::postgres ? "postgres" : "sqlite") + ":mq/" + std::to_string(m.version);
      auto it = pinned.find(key);
      ASSERT_NE(it, pinned.end()) << key << " is new: pin its checksum here";
      EXPECT_EQ(m.checksum, it->second) << key << " (" << m.name << ") was edited after release";
      ++seen;
    }
  }
  EXPECT_EQ(seen, pinned.size());
}

TEST(migration_files, every_version_has_an_up_and_a_down_section) {
  for (const auto kind : {engine::postgres, engine::sqlite}) {
    const auto files = migration_files(kind, "mq");
    ASSERT_EQ(files.size(), 3u);
    for (std::size_t i = 0; i < files.size(); ++i) {
      EXPECT_EQ(files[i].version, static_cast<int>(i) + 1);
      EXPECT_FALSE(files[i].up.empty()) << files[i].name;
      EXPECT_FALSE(files[i].down.empty()) << files[i].name;
    }
  }
  // The index build must run outside a transaction on PostgreSQL (CONCURRENTLY).
  const auto pg = migration_files(engine::postgres, "mq");
  EXPECT_TRUE(pg[0].transactional);
  EXPECT_FALSE(pg[1].transactional);
  EXPECT_EQ(pg[1].rebuild_invalid, (std::vector<std::string>{"idx_queue_group_order", "idx_queue_fifo"}));
  EXPECT_FALSE(pg[2].transactional);
  EXPECT_EQ(pg[2].rebuild_invalid, (std::vector<std::string>{"idx_queue_group_head"}));
}

TEST(migration_files, statements_split_at_semicolons_that_end_a_line) {
  const auto parts = split_statements("-- comment\nCREATE INDEX a\n  ON t (x);\nCREATE INDEX b ON t (y);\n");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_NE(parts[0].find("CREATE INDEX a"), std::string::npos);
  EXPECT_NE(parts[1].find("CREATE INDEX b"), std::string::npos);
}

TEST(migration_files, templates_quote_a_configured_schema_and_default_to_current_schema) {
  EXPECT_EQ(render_template("CREATE TABLE {{s}}t; SELECT {{schema_name}};", "billing"),
            "CREATE TABLE \"billing\".t; SELECT 'billing';");
  EXPECT_EQ(render_template("CREATE TABLE {{s}}t; SELECT {{schema_name}};", ""),
            "CREATE TABLE t; SELECT current_schema();");
}

TEST(migration_files, released_outbox_migrations_keep_their_checksums) {
  const std::map<std::string, std::string> pinned = {
      {"postgres:outbox/1", "382f63e1b2aedc1720e84d6f71751c154c58d52e2938d2e55cfd1f0ed099587d"},
      {"sqlite:outbox/1", "f4c8599ca96006474b787e5bab4f89ef88050c0ac7d1b27e6d3350e293b1c868"},
  };
  std::size_t seen = 0;
  for (const auto kind : {engine::postgres, engine::sqlite}) {
    for (const auto& m : migration_files(kind, "outbox")) {
      const std::string key =
          std::string(kind == engine::postgres ? "postgres" : "sqlite") + ":outbox/" + std::to_string(m.version);
      auto it = pinned.find(key);
      ASSERT_NE(it, pinned.end()) << key << " is new: pin its checksum here";
      EXPECT_EQ(m.checksum, it->second) << key << " (" << m.name << ") was edited after release";
      EXPECT_FALSE(m.up.empty());
      EXPECT_FALSE(m.down.empty());
      ++seen;
    }
  }
  EXPECT_EQ(seen, pinned.size());
}

TEST(migration_files, released_catalog_migrations_keep_their_checksums_and_name_their_table) {
  const std::map<std::string, std::string> pinned = {
      {"postgres:mq_catalog/1", "6bcd60b2d04fd67f2c4fbc65b0fe9fa309b64b9aa78e4ea8767acf315d7c371f"},
      {"sqlite:mq_catalog/1", "986f83a5c29dc4e43663734e0714c6955259a1b6887e2fd3adad57f88f1021fe"},
      {"postgres:mq_catalog/2", "7342784d66d6eb60464576fc8e2a53ad0213859ac58604288ae43722b36c5e3e"},
      {"sqlite:mq_catalog/2", "548f9f87ef89b997580379db5356259bbe510e26187d970b895458a39ca74389"},
  };
  std::size_t seen = 0;
  for (const auto kind : {engine::postgres, engine::sqlite}) {
    for (const auto& m : migration_files(kind, "mq_catalog")) {
      const std::string key = std::string(engine_name(kind)) + ":mq_catalog/" + std::to_string(m.version);
      auto it = pinned.find(key);
      ASSERT_NE(it, pinned.end()) << key << " is new: pin its checksum here";
      EXPECT_EQ(m.checksum, it->second) << key << " (" << m.name << ") was edited after release";
      EXPECT_FALSE(m.up.empty());
      EXPECT_FALSE(m.down.empty());
      ++seen;
    }
  }
  EXPECT_EQ(seen, pinned.size());
  EXPECT_EQ(ledger_target_sql(engine::sqlite, "mq_catalog", ""), "'main.spool_mq_queues'");
}

TEST(migration_files, outbox_templates_render_the_configured_quoted_tables) {
  const auto names = outbox_names_of("order", "");
  EXPECT_EQ(render_template("CREATE TABLE {{s}}{{outbox}}; CREATE INDEX \"{{outbox_raw}}_claim_idx\"; {{outbox_audit}}",
                            "billing", {}, &names),
            "CREATE TABLE \"billing\".\"order\"; CREATE INDEX \"order_claim_idx\"; \"order_replay_audit\"");
  EXPECT_EQ(ledger_target_sql(engine::postgres, "outbox", "billing", {}, &names), "'billing.order'");
  // Without names, the defaults; nothing is remembered between calls.
  EXPECT_EQ(render_template("{{outbox}} {{outbox_audit}}", ""), "\"outbox_messages\" \"outbox_messages_replay_audit\"");
  EXPECT_EQ(ledger_target_sql(engine::sqlite, "outbox", ""), "'main.outbox_messages'");
  EXPECT_THROW((void)outbox_names_of(std::string(51, 'a'), ""), spool::error);
}

TEST(migration_files, released_ops_migrations_keep_their_checksums) {
  const std::map<std::string, std::string> pinned = {
      {"postgres:ops/1", "441eaa8c34fa05fe2c59c17556aec05faefc439cd61f5b0c71c0a4f18e512058"},
      {"postgres:ops/2", "f49fe0fc79a4da9bdfb7940c1153d9dc56c2c54618a20429b4bc3e3f4a926762"},
      {"postgres:ops/3", "e0d46bb71fc3f5255c8ef45adbe5c835c8b61556a4fdb44c8923640e03e53312"},
      {"sqlite:ops/1", "efe1179f765644c293ca713b081ca89ca848041ccfe45f835e077abc479ce840"},
      {"sqlite:ops/2", "f9fb9bdf4f53070d2680f9d223412d989fd3b9231bf142c7ce667502e48b3c59"},
      {"sqlite:ops/3", "8525ad018115f513635c71bae4701a76570322aad84e6d6e6fce733f3774a4dc"},
  };
  std::size_t seen = 0;
  for (const auto kind : {engine::postgres, engine::sqlite}) {
    const auto files = migration_files(kind, "ops");
    ASSERT_EQ(files.size(), 3u);
    for (std::size_t i = 0; i < files.size(); ++i) {
      const auto& m = files[i];
      EXPECT_EQ(m.version, static_cast<int>(i) + 1);
      EXPECT_TRUE(m.transactional) << m.name << ": each ops step runs in one transaction with its ledger row";
      EXPECT_FALSE(m.up.empty()) << m.name;
      EXPECT_FALSE(m.down.empty()) << m.name;
      const std::string key =
          std::string(kind == engine::postgres ? "postgres" : "sqlite") + ":ops/" + std::to_string(m.version);
      auto it = pinned.find(key);
      ASSERT_NE(it, pinned.end()) << key << " is new: pin its checksum here";
      EXPECT_EQ(m.checksum, it->second) << key << " (" << m.name << ") was edited after release";
      ++seen;
    }
  }
  EXPECT_EQ(seen, pinned.size());
}

TEST(migration_files, ops_templates_quote_the_configured_table_and_name_its_indexes_after_it) {
  EXPECT_EQ(render_template("CREATE TABLE {{s}}{{ops}}; CREATE INDEX \"idx_{{ops_raw}}_type_status\";", "work", "jobs"),
            "CREATE TABLE \"work\".\"jobs\"; CREATE INDEX \"idx_jobs_type_status\";");
  EXPECT_EQ(render_template("{{ops}}", ""), "\"ops_queue\"");
  EXPECT_EQ(ledger_target_sql(engine::postgres, "ops", "work", "jobs"), "'work.jobs'");
  EXPECT_EQ(ledger_target_sql(engine::sqlite, "ops", "", ""), "'main.ops_queue'");
}

}  // namespace spool::detail
