#include "compiler/materialize_outputs.h"

#include "compiler/pass_util.h"

#include <memory>
#include <vector>

namespace ferry::compiler {

bool materialize_outputs(ir::Program& program) {
  bool changed = run_on_bodies(program, materialize_outputs);
  std::vector<char> is_input(program.values.size(), 0), returned(program.values.size(), 0);
  for (ir::ValueId v : program.inputs) is_input[static_cast<size_t>(v)] = 1;
  for (ir::ValueId& v : program.outputs) {
    if (!is_input[static_cast<size_t>(v)] && !returned[static_cast<size_t>(v)]) {
      returned[static_cast<size_t>(v)] = 1;
      continue;
    }
    const ir::Type t = program.type(v);
    const ir::ValueId copy = program.add_value(t);
    program.equations.push_back(device_put(v, copy, t.kind));
    v = copy;
    changed = true;
  }
  return changed;
}

}  // namespace ferry::compiler
