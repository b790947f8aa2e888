// How the collectives' kernels of every backend lay out an exchange. Where the exchanged dimension
// is not the outermost one, each process's part is not one contiguous block, so the data are
// rearranged through the kernel's workspace: an all-gather at dimension d of x = [outer, rest]
// gathers [N, outer, rest] and writes [outer, N, rest]; a reduce-scatter at d of
// x = [outer, N, part] sends [N, outer, part].
#pragma once

#include <cstdint>
#include <span>
#include <variant>

#include "ir/program.h"
#include "runtime/kernel.h"

namespace ferry::runtime {

// Elements of x's dimensions before `d`: 1 where each process's part is contiguous as it is.
inline int64_t outer_of(const ir::Type& x, int64_t d) {
  int64_t n = 1;
  for (int64_t i = 0; i < d; ++i) n *= x.shape[static_cast<size_t>(i)];
  return n;
}

// The workspace of all_gather and psum_scatter: the gathered or the sent array where it must be
// rearranged, else none.
inline int64_t collective_workspace(const ir::Equation& eq, std::span<const ir::Type* const> inputs,
                                    std::span<const ir::Type* const> outputs) {
  const auto* p = std::get_if<ir::CollectiveDimParams>(&eq.params);
  if (!p || outer_of(*inputs[0], p->dimension) == 1) return 0;
  WorkspaceSize w;
  w.add<char>(eq.prim == Primitive::all_gather ? outputs[0]->size_bytes() : inputs[0]->size_bytes());
  return w.bytes;
}

}  // namespace ferry::runtime
