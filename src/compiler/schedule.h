// The scheduler: reorders each program's equations (bodies included) to keep the device peak low.
// Only dependences constrain the order, so results do not change.
//
// It builds a few candidate orders and keeps the one with the lowest device peak by the buffer
// model (order_peak.h); ties keep the earlier candidate:
// - just in time: the equations not marked rematerialized run in program order, each preceded by
//   the rematerialized work it reads (recomputations and fetches of a backward pass) that has not
//   run yet, so a recomputed value or a fetch exists only from just before its first reader; an
//   offload runs as soon as its source exists, so the device buffer it empties is freed early.
// - memory first: a list schedule over the equations whose inputs are all computed: first any
//   that frees device memory (most first), else the one whose results are read soonest in program
//   order; rematerialized work only when nothing else is ready.
// - the program order as it is.
// Offload and fetch copies are then moved by place_copies to hide their transfers.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

bool schedule_for_memory(ir::Program& program);

}  // namespace ferry::compiler
