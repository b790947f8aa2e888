// The ferry::Error a callable throws (a test failure if it throws none).
#pragma once

#include <gtest/gtest.h>

#include "ferry/error.h"

namespace ferry::testing {

template <class F> Error error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ferry::Error";
  return Error(ErrorCode::internal, "none");
}

}  // namespace ferry::testing
