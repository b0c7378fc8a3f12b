// Opt-in interop with a raw libpq connection; the only Spool header that
// includes libpq-fe.h.
#pragma once

#include <libpq-fe.h>

#include "spool/pg.hpp"

namespace spool::pg {

// Wraps an application's PGconn that is inside a transaction block, so Spool's
// transactional calls write into that transaction. Spool never commits, rolls
// back or closes it. Errors: transaction_required when conn is not in a
// transaction block (PQtransactionStatus != PQTRANS_INTRANS);
// invalid_argument when conn is null.
[[nodiscard]] tx adopt(PGconn* conn);

}  // namespace spool::pg
