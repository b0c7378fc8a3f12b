// The libpqxx adapter (outbox.md §5; scenario 4): inserts through
// pqxx::work, commits and rolls back with it; pqxx::nontransaction does not compile.
#include "spool/outbox/pqxx.hpp"

#include <gtest/gtest.h>

#include <type_traits>

#include "spool/database.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

template <class Tx>
concept insertable = requires(writer& w, Tx& tx, const envelope& e) { outbox::insert(w, tx, e); };

static_assert(insertable<pqxx::work>);
static_assert(!insertable<pqxx::nontransaction>, "a nontransaction has no transaction block");

envelope env(std::string id) {
  envelope e;
  e.id = std::move(id);
  e.topic = "t";
  return e;  // empty payload on purpose
}

TEST(outbox_pqxx_postgres, the_adapter_inserts_through_pqxx_work_and_rolls_back_with_it) {
  const std::string uri = make_pg_database("outbox_pqxx");
  auto db = database::open(uri);
  outbox::migrate(db);
  writer w(db);
  pqxx::connection conn(uri);
  {
    pqxx::work tx(conn);
    tx.exec0("CREATE TABLE app_orders (id text)");
    tx.exec0("INSERT INTO app_orders VALUES ('o1')");
    EXPECT_EQ(outbox::insert(w, tx, env("committed")).status, insert_status::inserted);
    const auto r = outbox::insert_batch(w, tx, {env("b1"), env("b2")});
    EXPECT_EQ(r.size(), 2u);
    tx.commit();
  }
  {
    pqxx::work tx(conn);
    (void)outbox::insert(w, tx, env("rolled_back"));
    try {
      (void)outbox::insert(w, tx, env("committed"));
      ADD_FAILURE() << "duplicate id accepted";
    } catch (const spool::error& e) {
      EXPECT_EQ(e.reason(), "duplicate_id");
    }
    tx.abort();
  }
  EXPECT_EQ(db.exec("SELECT count(*) FROM outbox_messages").at(0).at(0), "3");
  EXPECT_EQ(db.exec("SELECT count(*) FROM app_orders").at(0).at(0), "1");
}

}  // namespace
}  // namespace spool::test
