// What every benchmark states about the database it measured.
#pragma once

#include <string>

#include "spool/database.hpp"

namespace spool::bench {

struct engine_facts {
  std::string engine;       // "postgres" | "sqlite"
  std::string synchronous;  // PG: SHOW synchronous_commit; SQLite: PRAGMA synchronous by name
  std::string fsync;        // PG only: a test cluster often runs with fsync=off, which changes everything
};

inline engine_facts describe(spool::database& db) {
  engine_facts f;
  if (db.kind() == spool::engine::postgres) {
    f.engine = "postgres";
    f.synchronous = db.exec("SHOW synchronous_commit").at(0).at(0).value_or("");
    f.fsync = db.exec("SHOW fsync").at(0).at(0).value_or("");
  } else {
    f.engine = "sqlite";
    const auto level = db.exec("PRAGMA synchronous").at(0).at(0).value_or("");
    const char* names[] = {"off", "normal", "full", "extra"};
    f.synchronous = level.size() == 1 && level[0] >= '0' && level[0] <= '3' ? names[level[0] - '0'] : level;
  }
  return f;
}

}  // namespace spool::bench
