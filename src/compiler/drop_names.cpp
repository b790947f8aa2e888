#include "compiler/drop_names.h"

#include <vector>

#include "compiler/pass_util.h"

namespace ferry::compiler {

bool drop_names(ir::Program& program) {
  bool changed = run_on_bodies(program, drop_names);
  // named[v]: the value v names (itself when v is no name); names of names resolve in program order.
  std::vector<ir::ValueId> named(program.values.size());
  for (size_t v = 0; v < named.size(); ++v) named[v] = static_cast<ir::ValueId>(v);
  std::vector<int> producer(program.values.size(), -1);  // index in `kept`
  std::vector<ir::Equation> kept;
  kept.reserve(program.equations.size());
  for (ir::Equation& eq : program.equations) {
    for (ir::ValueId& v : eq.inputs) v = named[static_cast<size_t>(v)];
    if (eq.prim == Primitive::checkpoint_name) {
      const ir::ValueId value = eq.inputs[0];
      named[static_cast<size_t>(eq.outputs[0])] = value;
      // The name stays on the equation that made the value, where that names nothing else: the
      // memory report names buffers by their maker's name, and the user knows the value by it.
      if (int e = producer[static_cast<size_t>(value)]; e >= 0 && kept[static_cast<size_t>(e)].outputs.size() == 1 &&
                                                        kept[static_cast<size_t>(e)].name.empty())
        kept[static_cast<size_t>(e)].name = eq.name;
      changed = true;
      continue;
    }
    for (ir::ValueId v : eq.outputs) producer[static_cast<size_t>(v)] = static_cast<int>(kept.size());
    kept.push_back(std::move(eq));
  }
  program.equations = std::move(kept);
  for (ir::ValueId& v : program.outputs) v = named[static_cast<size_t>(v)];
  return changed;
}

}  // namespace ferry::compiler
