#include "compiler/lower_copies.h"

#include "compiler/pass_util.h"

#include <memory>
#include <vector>

namespace ferry::compiler {

bool lower_copies(ir::Program& program) {
  bool changed = run_on_bodies(program, lower_copies);
  std::vector<ir::Equation> out;
  out.reserve(program.equations.size());
  for (ir::Equation& eq : program.equations) {
    if (eq.prim != Primitive::device_put || program.type(eq.inputs[0]).kind == program.type(eq.outputs[0]).kind) {
      out.push_back(std::move(eq));
      continue;
    }
    append_async_pair(program, eq, ir::op::copy_start, ir::op::copy_done, out);
    changed = true;
  }
  program.equations = std::move(out);
  return changed;
}

}  // namespace ferry::compiler
