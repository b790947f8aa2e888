// What differentiating a checkpoint learns about a name-based decision (transforms/unused_names.h
// makes and reads these), kept on the root trace so that lowering can turn the names no backward
// pass needed into warnings. Here, below the transforms, because the tracer holds them.
#pragma once

#include <string>

#include "ir/program.h"

namespace ferry::detail {

// One named value a policy saved or offloaded, and whether the backward pass read it.
struct NamedDecision {
  std::string name;    // the checkpoint_name
  std::string policy;  // the policy's name
  ir::RematDecision decision;
  ir::Type type;
  bool needed = false;
};

}  // namespace ferry::detail
