// What Lowered and Compiled hold.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "compiler/target.h"
#include "ferry/jit.h"
#include "ir/program.h"
#include "runtime/backend.h"
#include "runtime/executable.h"

namespace ferry::detail {

struct LoweredImpl {
  std::shared_ptr<const ir::Program> program;
  std::vector<char> donated;  // per input: jit's donate_argnums, flattened
  std::vector<std::string> warnings;  // see Lowered::warnings
  // The traced function's arguments (a tuple) and result; null for parsed programs.
  std::shared_ptr<const TreeDef> input_structure, output_structure;
};

// parse_program for text that may hold the compiler's own primitives (fused, copy_start,
// copy_done): tests and fuzzers that start from a compiled program's text.
Lowered parse_program_with_compiler_ops(const std::string& text);

struct CompiledImpl {
  // A constructor, not aggregate initialisation in make_shared, which clang 14 lacks (fuzz builds).
  CompiledImpl(std::shared_ptr<const ir::Program> program, std::shared_ptr<const compiler::MemoryPlan> plan,
               std::shared_ptr<const runtime::Executable> executable, CompileOptions options, compiler::Target target)
      : program(std::move(program)), plan(std::move(plan)), executable(std::move(executable)), options(std::move(options)),
        target(std::move(target)), copies(this->executable->backend().make_copy_engine()) {}

  std::shared_ptr<const ir::Program> program;  // after the compiler's passes
  std::shared_ptr<const compiler::MemoryPlan> plan;
  std::shared_ptr<const runtime::Executable> executable;
  CompileOptions options;
  compiler::Target target;  // what the options resolved to (the cost model's rates, limit, ...)
  std::vector<std::string> warnings;  // the Lowered program's
  std::shared_ptr<const TreeDef> input_structure, output_structure;  // the Lowered program's
  mutable std::mutex stats_mutex;
  mutable ExecutionStats last_stats;
  mutable std::string last_trace;  // the last run_traced() run's Chrome trace, for memory_html()
  // Its own copy engine (on the CPU a thread): copies overlap with compute.
  std::unique_ptr<runtime::CopyEngine> copies;
  // A program with collectives checks at its first call that every process runs it
  // (driver/agreement.h); `agreed` once that check passed.
  bool collectives = false;
  mutable std::mutex agreement_mutex;
  mutable bool agreed = false;
  void check_agreement() const;
};

}  // namespace ferry::detail
