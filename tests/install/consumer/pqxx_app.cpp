// Compiles and links against spool/outbox/pqxx.hpp through spool::outbox_pqxx:
// the adapter's functions take pqxx::dbtransaction&, which a
// pqxx::nontransaction (no transaction block) is not.
#include <spool/outbox/pqxx.hpp>

#include <cstdio>
#include <type_traits>

static_assert(std::is_convertible_v<pqxx::work&, pqxx::dbtransaction&>);
static_assert(!std::is_convertible_v<pqxx::nontransaction&, pqxx::dbtransaction&>);

int main() {
  // Taking the addresses instantiates the inline adapter, so libpqxx's and
  // Spool's symbols must resolve at link time.
  auto* one = static_cast<spool::outbox::insert_result (*)(spool::outbox::writer&, pqxx::dbtransaction&,
                                                           const spool::outbox::envelope&)>(&spool::outbox::insert);
  auto* many = static_cast<std::vector<spool::outbox::insert_result> (*)(
      spool::outbox::writer&, pqxx::dbtransaction&, const std::vector<spool::outbox::envelope>&)>(
      &spool::outbox::insert_batch);
  if (one == nullptr || many == nullptr) return 1;
  std::puts("outbox_pqxx consumer: OK");
  return 0;
}
