// The outbox store tests' fixture (store_test.cpp, store_operations_test.cpp):
// the conformance fixture and an image of every stored byte, for calls that
// must change nothing. In a named namespace, so that both files share one
// fixture type for the parameterised suite.
#pragma once

#include <string>
#include <vector>

#include "outbox/store.hpp"
#include "outbox_fixture.hpp"

namespace spool::test {

// The store tests name the outbox API unqualified, as its own files do.
using namespace spool::outbox;

class outbox_store : public outbox_conformance {
 protected:
  // Every column of every row of the outbox table and of its replay audit, as
  // text: a call that "changes nothing" leaves this byte-identical.
  std::string table_image() {
    std::string out;
    for (const char* sql : {"SELECT * FROM outbox_messages ORDER BY seq",
                            "SELECT * FROM outbox_messages_replay_audit ORDER BY replay_id, message_id"}) {
      for (const auto& r : db_->exec(sql)) {
        for (const auto& cell : r) out += cell ? "'" + *cell + "' " : "NULL ";
        out += '\n';
      }
      out += "--\n";
    }
    return out;
  }
};

inline std::vector<std::string> ids_of(const std::vector<claimed_message>& c) {
  std::vector<std::string> out;
  for (const auto& m : c) out.push_back(m.message.id);
  return out;
}

}  // namespace spool::test
