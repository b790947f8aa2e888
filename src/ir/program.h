// Program: ferry's IR. Semantics:
// - A Program has typed values numbered 0..n-1 (SSA: each is defined exactly once, either as an
//   input of the program or as an output of one equation), a list of equations in execution order,
//   and the values it returns.
// - An Equation applies one primitive with its typed parameters to input values and defines its
//   output values. `subprograms` hold bodies for control flow (scan, checkpoint) in later layers.
// - `name` is a source name (a checkpoint name or a user tag) carried for reports; it does not
//   change what the equation computes.
// - `decision` is what a checkpoint policy decided for the equation's outputs (only inside
//   checkpoint bodies): saved for the backward pass, recomputed there, or offloaded to another
//   memory kind and fetched back. Differentiation reads it; nothing else does.
// - `rematerialized` marks an equation of a backward pass that recomputes (or fetches back) a
//   forward value: it stays in the backward pass and CSE never merges it with its forward twin.
// - `automatic` marks a rematerialized equation that an `automatic` policy left to the compiler:
//   the automatic planner (compiler/auto_plan.h) may replace its results by its forward twin's,
//   saved or offloaded, instead of recomputing them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ferry/primitive.h"
#include "ir/ops.h"
#include "ir/params.h"
#include "ir/type.h"

namespace ferry::ir {

using ValueId = int32_t;

struct Program;

struct RematDecision {
  enum class Kind : uint8_t { none, save, recompute, offload, automatic };
  Kind kind = Kind::none;
  MemoryKind src = MemoryKind::device;       // offload: where the value lives
  MemoryKind dst = MemoryKind::pinned_host;  // offload: where it waits for the backward pass
  // The policy decided this for a checkpoint_name equation because of its name (it decides
  // otherwise for the same equation without one): what warnings about names with no effect are
  // about. Not part of the text form; only differentiation, which never runs on parsed text, reads it.
  bool by_name = false;
  bool operator==(const RematDecision&) const = default;
};

struct Equation {
  Primitive prim = Primitive::add;
  Params params;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::vector<std::shared_ptr<const Program>> subprograms;
  std::string name;
  RematDecision decision;
  bool rematerialized = false;
  bool automatic = false;
};

struct Program {
  std::string name = "main";
  std::vector<Type> values;  // type of each value, indexed by ValueId
  std::vector<ValueId> inputs;
  std::vector<Equation> equations;
  std::vector<ValueId> outputs;

  ValueId add_value(Type t) {
    values.push_back(std::move(t));
    return static_cast<ValueId>(values.size() - 1);
  }
  const Type& type(ValueId v) const { return values.at(static_cast<size_t>(v)); }
};

}  // namespace ferry::ir
