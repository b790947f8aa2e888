#include "runtime/workspace.h"

#include <vector>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/backend.h"
#include "runtime/kernel.h"

namespace ferry::runtime {

void Workspace::overdrawn(int64_t bytes) const {
  throw Error(ErrorCode::internal, fmt::format("kernel workspace: a kernel took {} more bytes after {} of the {} it "
                                               "declared",
                                               bytes, used_, size_));
}

plan::WorkspaceFn workspace_sizes(const std::string& backend) {
  Backend* b = &runtime::backend(backend);
  return [b](const ir::Program& p, const ir::Equation& eq) -> int64_t {
    WorkspaceSizeFn size = b->workspace_size(eq.prim);
    if (size == nullptr) return 0;
    std::vector<const ir::Type*> in, out;
    for (ir::ValueId v : eq.inputs) in.push_back(&p.type(v));
    for (ir::ValueId v : eq.outputs) out.push_back(&p.type(v));
    return size(eq, in, out);
  };
}

}  // namespace ferry::runtime
