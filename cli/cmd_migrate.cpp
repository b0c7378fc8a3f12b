// `spool migrate`: apply, print or revert the schema migrations
// (DESIGN.md, Shared contracts → Migrations).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "spool/migrate.hpp"

namespace spool::cli {

namespace {

struct migrate_args {
  std::vector<std::string> components;
  std::string schema;
  std::string ops_table;
  std::string outbox_table;
  bool print = false;
  std::string revert;
  bool confirm_data_loss = false;
};

void run_migrate(cli_context& ctx, const migrate_args& a) {
  spool::migrate_options options;
  options.components = a.components;
  options.schema = a.schema;
  options.ops_table = a.ops_table;
  options.outbox_table = a.outbox_table;
  // open() validates the URI and picks the engine without connecting, which
  // is what lets --print work with no server reachable.
  auto db = open_database(ctx);

  if (a.print) {
    const std::string script = spool::migration_script(db.kind(), options);
    if (ctx.json) {
      emit_json(ctx, ojson{{"engine", engine_name(db.kind())}, {"script", script}});
    } else {
      ctx.out += script;
      if (!script.empty() && script.back() != '\n') ctx.out += '\n';
    }
    return;
  }

  if (!a.revert.empty()) {
    spool::revert_migration(db, a.revert, a.confirm_data_loss, options);
    if (ctx.json) {
      emit_json(ctx, ojson{{"reverted", a.revert}});
    } else {
      emit_line(ctx, fmt::format("reverted {}", a.revert));
    }
    return;
  }

  const auto applied = spool::migrate(db, options);
  if (ctx.json) {
    ojson list = ojson::array();
    for (const auto& m : applied) {
      list.push_back(ojson{{"component", m.component}, {"version", m.version}, {"name", m.name}});
    }
    emit_json(ctx, ojson{{"applied", std::move(list)}});
    return;
  }
  if (applied.empty()) emit_line(ctx, "up to date: nothing to apply");
  for (const auto& m : applied)
    emit_line(ctx, fmt::format("applied {}/{} ({})", m.component, m.version, m.name));
}

}  // namespace

void add_migrate_command(CLI::App& app, cli_context& ctx) {
  auto args = std::make_shared<migrate_args>();
  auto* cmd = app.add_subcommand("migrate", "Apply every pending schema migration (or print or revert them)");
  cmd->footer(
      "Applies each selected component's pending versions under the migration lock and records them in "
      "spool_schema_migrations.\n"
      "--json prints {\"applied\":[{\"component\":\"mq\",\"version\":1,\"name\":\"0001_init\"}]}; "
      "with --print, {\"engine\":…,\"script\":…}; with --revert, {\"reverted\":\"COMPONENT/VERSION\"}.");
  add_connection_options(*cmd, ctx);
  cmd->add_option("--component", args->components,
                  "Components to migrate, comma-separated (mq, ops, outbox) [default: all]")
      ->delimiter(',');
  cmd->add_option("--schema", args->schema, "PostgreSQL schema for the tables [default: current_schema()]");
  cmd->add_option("--ops-table", args->ops_table, "The op queue's table (at most 41 bytes of [a-z0-9_]) [default: ops_queue]");
  cmd->add_option("--outbox-table", args->outbox_table, "The outbox's table [default: outbox_messages]");
  auto* print =
      cmd->add_flag("--print", args->print,
                    "Print the migrations as plain SQL for the engine --db names, without connecting");
  auto* revert = cmd->add_option("--revert", args->revert,
                                 "Run the Down section of one version, e.g. mq/2 (destroys data; needs "
                                 "--confirm-data-loss)");
  cmd->add_flag("--confirm-data-loss", args->confirm_data_loss, "Confirm that --revert may destroy data")
      ->needs(revert);
  print->excludes(revert);
  cmd->callback([&ctx, args] { ctx.action = [&ctx, args] { run_migrate(ctx, *args); }; });
}

}  // namespace spool::cli
