// The primitive registry: per primitive of the op table (ir/ops.def, which gives its name, operands,
// parameters, in-place inputs and traits), its shape/dtype rule and its cost, set by its family's
// file under src/prims/. VJP rules live with the transforms (transforms/vjp_rules.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include "ferry/primitive.h"
#include "ir/program.h"

namespace ferry::prims {

// Work and traffic of one equation, for the cost model and the scheduler. The kinds of work are
// counted apart because a machine does them at very different rates (compiler/step_time.h): matrix
// products run at the BLAS rate and pay a fixed cost per product; transcendental functions (exp,
// tanh, erf, ...) cost many times an add; the rest of the arithmetic runs at the vector rate.
struct Cost {
  double flops = 0;  // all floating-point and integer operations, matrix products included
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  double transcendentals = 0;  // evaluations of exp, log, tanh, erf, pow, ...
  double dot_flops = 0;        // the part of `flops` done by matrix products
  double dot_products = 0;     // independent matrix products (a batched dot_general's batch size)

  Cost& operator+=(const Cost& o);
  Cost scaled(double times) const;  // the cost of `times` runs
};

// Output types from input types and parameters. Throws ferry::Error(INVALID_ARGUMENT) whose message
// says what is wrong (infer_types adds the primitive's name and the operand types).
using ShapeRule = std::vector<ir::Type> (*)(std::span<const ir::Type> inputs, const ir::Params& params);
// Shape rule of a primitive with sub-programs (control flow): the bodies decide the output types.
using BodyShapeRule = std::vector<ir::Type> (*)(std::span<const ir::Type> inputs, const ir::Params& params,
                                                std::span<const std::shared_ptr<const ir::Program>> bodies);
using CostRule = Cost (*)(std::span<const ir::Type> inputs, std::span<const ir::Type> outputs,
                          const ir::Params& params);
// Cost of a primitive with bodies (the bodies' work times the trip count).
using BodyCostRule = Cost (*)(const ir::Equation& eq);
struct PrimitiveInfo {
  Primitive prim = Primitive::add;
  std::string_view name;
  int num_inputs = 0;        // -1: variadic (at least one)
  ir::Params params;         // default value; its alternative is the struct this primitive takes
  ShapeRule shape_rule = nullptr;
  BodyShapeRule body_shape_rule = nullptr;  // instead of shape_rule, for primitives with bodies
  CostRule cost_rule = nullptr;
  BodyCostRule body_cost_rule = nullptr;  // instead of cost_rule, for primitives with bodies
  // Which inputs the one output may overwrite when that input dies there (bit i: input i; buffer
  // assignment then writes in place): the op table's.
  int32_t in_place = 0;
};

const PrimitiveInfo& info(Primitive p);
// nullptr when no primitive has that name.
const PrimitiveInfo* find(std::string_view name);

// Runs p's shape rule. Throws INVALID_ARGUMENT "<prim>: <what is wrong> (operands: f32[2,3], ...)"
// on a wrong operand count, a wrong params struct, or any shape/dtype/memory-kind error.
// Primitives with bodies get them in `bodies`; any other primitive given bodies is an error.
std::vector<ir::Type> infer_types(Primitive p, const ir::Params& params, std::span<const ir::Type> inputs,
                                  std::span<const std::shared_ptr<const ir::Program>> bodies = {});

Cost cost(const ir::Equation& eq, const ir::Program& program);
// Sum over a program's equations (bodies included, times their trip counts).
Cost program_cost(const ir::Program& program);

std::string_view name_of(Primitive p);

}  // namespace ferry::prims
