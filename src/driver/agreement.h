// The check that every process runs the same program before its collectives exchange anything:
// at a program's first call each process sends the others a fingerprint (its arguments' types and
// a hash of the compiled program's text), and a process whose fingerprint differs from process
// 0's is refused with INVALID_ARGUMENT naming what differs. Processes that ran different programs
// into each other's collectives would otherwise exchange wrong data or wait for ever.
#pragma once

#include "ir/program.h"

namespace ferry::driver {

// Whether `program` (or a body in it) has a collective.
bool has_collectives(const ir::Program& program);

// Exchanges and compares the fingerprints (a no-op for one process). Every process raises the same
// error, naming the first process and argument that differ from process 0.
void check_processes_agree(const ir::Program& program);

}  // namespace ferry::driver
