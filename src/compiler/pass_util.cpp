#include "compiler/pass_util.h"

#include <memory>

namespace ferry::compiler {

bool run_on_bodies(ir::Program& program, const std::function<bool(ir::Program&)>& pass) {
  bool changed = false;
  for (ir::Equation& eq : program.equations)
    for (auto& body : eq.subprograms) {
      auto copy = std::make_shared<ir::Program>(*body);
      if (pass(*copy)) {
        body = copy;
        changed = true;
      }
    }
  return changed;
}

bool run_on_bodies_with_parent(ir::Program& program,
                               const std::function<bool(ir::Program&, const ir::Equation& parent)>& pass) {
  bool changed = false;
  for (ir::Equation& eq : program.equations)
    for (size_t b = 0; b < eq.subprograms.size(); ++b) {
      auto copy = std::make_shared<ir::Program>(*eq.subprograms[b]);
      ir::Equation parent = eq;
      parent.subprograms[b] = copy;
      if (pass(*copy, parent)) {
        eq.subprograms[b] = copy;
        changed = true;
      }
    }
  return changed;
}

void append_async_pair(ir::Program& program, const ir::Equation& eq, Primitive start_prim, Primitive done_prim,
                       std::vector<ir::Equation>& out) {
  ir::Equation start = eq;
  start.prim = start_prim;
  start.outputs = {program.add_value(program.type(eq.outputs[0]))};
  ir::Equation done = eq;
  done.prim = done_prim;
  done.params = ir::NoParams{};
  done.inputs = {start.outputs[0], eq.inputs[0]};
  out.push_back(std::move(start));
  out.push_back(std::move(done));
}

bool reorder(ir::Program& program, const std::vector<size_t>& order) {
  bool moved = false;
  for (size_t i = 0; i < order.size(); ++i) moved = moved || order[i] != i;
  if (!moved) return false;
  std::vector<ir::Equation> eqs;
  eqs.reserve(order.size());
  for (size_t e : order) eqs.push_back(std::move(program.equations[e]));
  program.equations = std::move(eqs);
  return true;
}

ir::Equation device_put(ir::ValueId in, ir::ValueId out, MemoryKind dst) {
  ir::Equation e;
  e.prim = Primitive::device_put;
  e.params = ir::DevicePutParams{dst};
  e.inputs = {in};
  e.outputs = {out};
  return e;
}

}  // namespace ferry::compiler
