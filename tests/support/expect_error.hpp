// EXPECT_SPOOL_ERROR(statement, errc): the statement throws spool::error with
// exactly that code — never just "it threw something".
#pragma once

#include <gtest/gtest.h>

#include "spool/error.hpp"

#define EXPECT_SPOOL_ERROR(stmt, expected_code)                                                      \
  do {                                                                                              \
    try {                                                                                           \
      stmt;                                                                                         \
      ADD_FAILURE() << "expected spool::error " << spool::to_string(expected_code) << ", got none"; \
    } catch (const spool::error& e) {                                                               \
      EXPECT_EQ(e.code(), expected_code) << e.what();                                               \
    }                                                                                               \
  } while (0)
