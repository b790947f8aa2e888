// The memory plan's data: where every value of a scheduled program lives (slots, buffers with live
// ranges and offsets, bodies' plans, the streamed slices of scans) and the workspaces kernels
// declare. The compiler makes it (compiler/memory_plan.h) and the runtime executes it: this is the
// one format the two share, so neither includes the other.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ir/program.h"

namespace ferry::plan {

inline constexpr int kNumMemoryKinds = 3;
inline constexpr int64_t kBufferAlignment = 64;
inline size_t kind_index(MemoryKind k) { return static_cast<size_t>(k); }

struct MemoryPlan;

struct Slot {
  enum class Where : uint8_t { arena, argument, external_input, external_output };
  Where where = Where::arena;
  MemoryKind kind = MemoryKind::device;
  int buffer = -1;  // arena: index into MemoryPlan::buffers
  int index = -1;   // argument / external input / external output position
};

// One allocation in an arena.
struct Buffer {
  MemoryKind kind = MemoryKind::device;
  int64_t size = 0;  // bytes, rounded up to kBufferAlignment
  int start = 0, end = 0;  // live over schedule positions [start, end]; the end of the program is n
  int64_t offset = 0;
  std::vector<ir::ValueId> values;  // the values it holds (several when written in place)
  int body_of = -1;                 // >= 0: the body region of that equation
  int scratch_of = -1;              // >= 0: a carry scratch buffer of that scan equation
  int stream_of = -1;               // >= 0: a double buffer of a streamed slice of that scan
  int workspace_of = -1;            // >= 0: the kernel workspace of that equation
  int output_of = -1;               // >= 0: not in the arena but in that output's allocation, at offset
};

// Scan steps overlap their host copies with compute across steps (double buffering):
// - a prefetched input: an xs slice in host memory whose only use in the body is a copy to the
//   device. The scan runner copies slice i+1 into one of two device buffers while step i runs on
//   the other; the body sees the fetched value as an extra external input and skips its copy.
// - a postponed output: a ys slice in host memory that the body fills by copying a device value.
//   The body writes that value into one of two device buffers instead, and the runner copies it to
//   the host stack while the next step runs; the body skips its copy.
struct StreamedSlice {
  int io = -1;                 // the body input (prefetch) or output (postpone) it replaces
  int external = -1;           // the extra external input/output index the body uses instead
  std::array<int, 2> buffers{-1, -1};  // the two device buffers (in the enclosing plan)
};

struct BodyPlan {
  std::shared_ptr<const MemoryPlan> plan;
  std::array<int, kNumMemoryKinds> region{-1, -1, -1};  // buffer per kind (-1: the body needs none)
  std::vector<int> carry_scratch;                        // scan: buffer per carry
  std::vector<StreamedSlice> prefetched, postponed;      // scan: double-buffered host slices
};

struct MemoryPlan {
  std::vector<Slot> slots;                       // per value
  std::vector<Buffer> buffers;
  std::vector<std::optional<BodyPlan>> bodies;   // per equation
  std::array<int64_t, kNumMemoryKinds> arena_size{};
  // For the runtime: buffers to take before an equation runs, and to give back after it.
  std::vector<std::vector<int>> acquire_before, release_after;  // per equation
  std::vector<char> skip;  // per equation: a copy the enclosing scan runner does instead
  std::vector<int> workspace;  // per equation: its workspace buffer (-1: none)
  // Top level: per output, the argument whose buffer it is written into (-1: its own allocation).
  std::vector<int> output_alias;
  // The schedule position where the live bytes of each kind peak, and those bytes.
  std::array<int, kNumMemoryKinds> peak_position{};
  std::array<int64_t, kNumMemoryKinds> peak_live{};
};

// The scratch bytes the backend's kernel for equation `eq` of `program` needs (0: none).
using WorkspaceFn = std::function<int64_t(const ir::Program& program, const ir::Equation& eq)>;

}  // namespace ferry::plan
