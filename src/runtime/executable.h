// Executable: a compiled program ready to run on a backend. It binds each equation to its kernel
// once, and knows after which instruction each value is dead so its buffer can be released.
// Buffers come from a BufferSource, the seam where the memory planner will hand out arena slices.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ferry/array.h"
#include "ir/program.h"
#include "runtime/kernel.h"

namespace ferry::runtime {

// Where the runtime gets the buffer for a value it is about to compute.
class BufferSource {
 public:
  virtual ~BufferSource() = default;
  virtual Array allocate(const ir::Type& type) = 0;
};

// Plain heap buffers, one allocation per value.
class HeapBufferSource final : public BufferSource {
 public:
  Array allocate(const ir::Type& type) override;
};

class Executable {
 public:
  // Binds every equation to a kernel of `backend`. UNIMPLEMENTED for an unknown backend or a
  // primitive the backend has no kernel for.
  Executable(std::shared_ptr<const ir::Program> program, const std::string& backend);

  // Checks the arguments against the program's inputs (count, dtype, shape, memory kind:
  // INVALID_ARGUMENT naming the argument) and runs. Outputs never alias the arguments.
  std::vector<Array> run(const std::vector<Array>& args, BufferSource& buffers) const;

  const ir::Program& program() const { return *program_; }

 private:
  struct Instruction {
    const ir::Equation* eq = nullptr;
    KernelFn kernel = nullptr;                // for primitives without bodies
    std::shared_ptr<const Executable> body;   // for scan and checkpoint
    std::vector<ir::ValueId> release_after;  // values whose last use is this instruction
  };

  // Runs a scan: the body once per step, on views of the xs slices, writing each y slice in place.
  void run_scan(const Instruction& ins, std::vector<Array>& slots, BufferSource& buffers) const;

  std::shared_ptr<const ir::Program> program_;
  std::vector<Instruction> instructions_;
};

}  // namespace ferry::runtime
