#include "prims/verify.h"

#include "ir/verifier.h"
#include "prims/registry.h"

namespace ferry::prims {

void verify(const ir::Program& p) {
  ir::verify(p, [](const ir::Equation& eq, std::span<const ir::Type> inputs) {
    return infer_types(eq.prim, eq.params, inputs, eq.subprograms);
  });
}

}  // namespace ferry::prims
