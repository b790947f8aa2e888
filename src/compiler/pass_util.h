// Small pieces every rewriting pass needs.
#pragma once

#include <functional>
#include <vector>

#include "ir/program.h"

namespace ferry::compiler {

// Runs `pass` on the body of every equation that has one (bodies are shared, so each is copied
// before it changes). Returns whether any body changed.
bool run_on_bodies(ir::Program& program, const std::function<bool(ir::Program&)>& pass);

// As run_on_bodies, and `pass` also gets the equation whose body it runs on (with that body in
// place of its original), for passes whose work depends on how the body is run (its memory plan).
bool run_on_bodies_with_parent(ir::Program& program,
                               const std::function<bool(ir::Program&, const ir::Equation& parent)>& pass);

// The asynchronous form of eq (a copy, a collective): `start` with eq's parameters, name and
// marks, defining a new value of eq's result type, then `done`(that value, eq's operand) defining
// eq's result, so the operand stays alive while the transfer is in flight. Appended to `out`.
void append_async_pair(ir::Program& program, const ir::Equation& eq, Primitive start, Primitive done,
                       std::vector<ir::Equation>& out);

// out = device_put(in) to the memory kind `dst`.
ir::Equation device_put(ir::ValueId in, ir::ValueId out, MemoryKind dst);

// Puts the equations in `order` (a permutation of their indices). Returns whether any moved.
bool reorder(ir::Program& program, const std::vector<size_t>& order);

}  // namespace ferry::compiler
