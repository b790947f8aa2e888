// Names whose decision has no effect: a checkpoint policy saves or offloads a value because of the
// name checkpoint_name gave it (RematDecision::by_name: everything_saveable saves every value, named
// or not, and is not about names), but the checkpoint's backward pass never reads that value, so
// nothing is kept and naming it changed nothing. Differentiating a checkpoint records one NamedDecision per named
// value its policy saves or offloads (read off the partition, not decided here); lowering turns the
// names that no backward pass needed into Lowered/Compiled::warnings(), and saved_residuals lists
// them as "unused". A checkpoint that is never differentiated records nothing.
#pragma once

#include <string>
#include <vector>

#include "ir/program.h"
#include "trace/named_decision.h"

namespace ferry::transforms {

struct Partition;

using detail::NamedDecision;

// The named values of `joint` (a checkpoint body's joint program) that its policy saves or
// offloads because of their names, each marked needed when the partition kept it as a residual.
std::vector<NamedDecision> named_decisions(const ir::Program& joint, const Partition& part, const std::string& policy);

// The names that no record needed (a name needed by any checkpoint, or any step, is not reported),
// one per name, the first record of each, in the order first recorded.
std::vector<NamedDecision> unneeded_names(const std::vector<NamedDecision>& records);

// "named 'act': not needed by the backward pass"
std::string unneeded_description(const NamedDecision& d);

// The warning for one unneeded name: its description, what the policy did, and that it had no
// effect.
std::string unneeded_warning(const NamedDecision& d);

}  // namespace ferry::transforms
