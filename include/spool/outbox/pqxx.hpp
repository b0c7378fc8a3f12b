// The outbox writer on a libpqxx transaction (libpqxx 6.4 or 7.x): the
// envelope commits or rolls back with the caller's pqxx::work. Takes
// pqxx::dbtransaction&, so a pqxx::nontransaction (no transaction block)
// does not compile. Built and installed only when libpqxx is found (CMake
// target spool::outbox_pqxx). Spool never commits or aborts the transaction;
// it runs unnamed statements through exec_params.
// Thread safety: as the transaction — one thread at a time.
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "spool/error.hpp"
#include "spool/outbox/writer.hpp"

namespace spool::outbox {

namespace detail {

// Runs the writer's statements on a pqxx transaction; libpqxx failures
// become spool::error with the outbox's reasons.
class pqxx_tx final : public foreign_pg_tx {
 public:
  explicit pqxx_tx(pqxx::dbtransaction& tx) : tx_(tx) {}

  std::vector<row> exec(const std::string& sql, const std::vector<param>& params) override {
    std::vector<std::string> texts(params.size());
    std::vector<const char*> values(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (const auto* s = std::get_if<std::string>(&params[i])) {
        texts[i] = *s;
      } else if (const auto* n = std::get_if<std::int64_t>(&params[i])) {
        texts[i] = std::to_string(*n);
      } else if (const auto* d = std::get_if<double>(&params[i])) {
        texts[i] = std::to_string(*d);
      }
      values[i] = std::holds_alternative<std::nullptr_t>(params[i]) ? nullptr : texts[i].c_str();
    }
    pqxx::result r;
    try {
      r = tx_.exec_params(sql, pqxx::prepare::make_dynamic_params(values));
    } catch (const pqxx::broken_connection& e) {
      throw error(errc::in_doubt, std::string("libpqxx: connection lost: ") + e.what(), "connection_lost");
    } catch (const pqxx::sql_error& e) {
      throw translate(e);
    } catch (const pqxx::usage_error& e) {
      throw error(errc::transaction_required, std::string("libpqxx: ") + e.what(), "transaction_required");
    }
    std::vector<row> out;
    out.reserve(r.size());
    for (const auto& rr : r) {
      row cols;
      for (const auto& f : rr) {
        if (f.is_null()) {
          cols.emplace_back(std::nullopt);
        } else {
          cols.emplace_back(std::string(f.c_str(), f.size()));
        }
      }
      out.push_back(std::move(cols));
    }
    return out;
  }

 private:
  static error translate(const pqxx::sql_error& e) {
    const std::string state = e.sqlstate();
    const std::string msg = std::string("libpqxx: ") + e.what();
    if (state == "25P02") return error(errc::invalid_state, msg, "transaction_aborted", state);
    if (state == "25006") return error(errc::invalid_state, msg, "not_writable", state);
    if (state == "42P01" || state == "3F000" || state == "42703") {
      return error(errc::invalid_state, msg + " (run `spool migrate`)", "schema_version_mismatch", state);
    }
    if (state == "23514") return error(errc::invalid_argument, msg, "value_outside_bounds", state);
    if (state == "40001" || state == "40P01" || state == "55P03" || state == "57014") {
      return error(errc::unavailable, msg, state == "57014" ? "statement_timeout" : "serialization_failure", state);
    }
    return error(errc::database_error, msg, "database_error", state);
  }

  pqxx::dbtransaction& tx_;
};

}  // namespace detail

// writer.insert_batch on a libpqxx transaction (see writer::insert_batch).
inline std::vector<insert_result> insert_batch(writer& w, pqxx::dbtransaction& tx, const std::vector<envelope>& batch) {
  detail::pqxx_tx adapter(tx);
  return w.insert_batch(adapter, batch);
}

inline insert_result insert(writer& w, pqxx::dbtransaction& tx, const envelope& e) {
  detail::pqxx_tx adapter(tx);
  return w.insert(adapter, e);
}

}  // namespace spool::outbox
