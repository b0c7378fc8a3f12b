// The op queue's embedded SQL, rendered for one schema and table. The op
// queue renders its own files: it needs only {{s}} and {{ops}}, and no
// migration machinery.
#include <fmt/format.h>

#include "common/embedded_sql.hpp"
#include "common/text/sql_template.hpp"
#include "common/identifier.hpp"
#include "ops/store.hpp"

namespace spool::ops::detail {

std::string render_ops_file(std::string_view path, const store_config& config) {
  const std::string table = config.table.empty() ? std::string("ops_queue") : config.table;
  return spool::detail::fill_placeholders(std::string(spool::detail::embedded_sql(path)),
                                          {{"{{s}}", spool::detail::schema_prefix(config.schema)},
                                           {"{{ops}}", spool::detail::quote_identifier(table)}});
}

std::string ops_sql(engine kind, const char* name, const store_config& config) {
  // The op queue's SQL variant: sql/<engine>/ops/queries/NAME.sql.
  return render_ops_file(fmt::format("{}/ops/queries/{}.sql", engine_name(kind), name), config);
}

}  // namespace spool::ops::detail
