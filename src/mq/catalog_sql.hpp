// The SQL of the queue catalog: sql/<engine>/mq_catalog/queries/<file>.sql
// with the schema filled in. Shared by catalog.cpp and catalog_messages.cpp.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "common/embedded_sql.hpp"
#include "common/text/sql_template.hpp"
#include "spool/database.hpp"

namespace spool::mq::detail {

inline std::string catalog_sql(engine kind, const std::string& schema, std::string_view file) {
  return spool::detail::fill_placeholders(
      std::string(spool::detail::embedded_sql(fmt::format("{}/mq_catalog/queries/{}.sql", engine_name(kind), file))),
      {{"{{s}}", spool::detail::schema_prefix(schema)}});
}

}  // namespace spool::mq::detail
