// The multi-process test binaries' global environment: every process joins the launch once,
// before any test (each test then runs the same programs on every process).
#pragma once

#include <gtest/gtest.h>

#include "ferry/ferry.h"

namespace ferry::testing {

class Joined : public ::testing::Environment {
 public:
  void SetUp() override { distributed::initialize(); }
};

inline int process_count() { return distributed::process_count(); }
inline int process_index() { return distributed::process_index(); }

}  // namespace ferry::testing
