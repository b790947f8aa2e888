// The device peak of a program run in a given order, by the same liveness model as buffer
// assignment (memory_plan.h) but without packing: a value occupies its (aligned) bytes from the
// position of its producer to its last reader, program outputs to the end; an output written in
// place over a dying input adds nothing; an equation with a body adds, at its own position, what its
// body plan and its scan buffers need. Arguments are not counted (no order changes them).
//
// It is what the scheduler compares candidate orders by, so it is linear in the program's size.
// Buffer assignment's packing can only add fragmentation on top of this figure.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace ferry::compiler {

class OrderPeak {
 public:
  explicit OrderPeak(const ir::Program& program);
  // The highest live device bytes when the equations run in `order` (a valid topological order).
  int64_t peak(const std::vector<size_t>& order) const;

 private:
  const ir::Program& program_;
  std::vector<int64_t> transient_;  // per equation: device bytes only it needs while it runs
};

}  // namespace ferry::compiler
