// Twins: the forward values an automatic checkpoint's backward pass recomputes, and the rewrite that
// saves or offloads them instead.
//
// Under policies::automatic, differentiation recomputes every value in the backward pass and marks
// the recomputing equations `automatic` (ir/program.h). Such an equation is a twin of a forward
// equation when both apply the same primitive with the same parameters to the same values, where a
// value the backward pass recomputes counts as its forward twin: they compute the same numbers, so
// the backward pass may read the forward value (saved) or a copy of it fetched back from host
// memory (offloaded) instead of recomputing it. Twins are found at the top level, and between a
// scan and the scan that differentiates it (the second runs the other way over the first's stacked
// residuals): a backward body's input is the forward body's value when it is a slice of what the
// forward scan stacked, or the same xs or constant operand.
//
// A candidate is a twin whose recomputation something other than another recomputation reads: the
// values the backward pass needs. Each gets a choice; a twin that is not a candidate is recomputed
// when a recomputed candidate needs it.
//
// A residual a forward scan stacks on the device for its backward scan only (an input of a
// checkpoint, or anything differentiation saved) is an entry too, with `stacked` set: it can be
// saved or offloaded (stacked in host memory, streamed a slice per step both ways), not recomputed.
#pragma once

#include <memory>
#include <vector>

#include "ferry/types.h"
#include "ir/program.h"

namespace ferry::compiler {

struct ScanPair {
  size_t forward = 0, backward = 0;  // top-level equation indices of the two scans
};

struct Twin {
  int pair = -1;               // -1: top level; else index into Twins::pairs (values of its bodies)
  ir::ValueId clone = -1;      // the recomputed value
  ir::ValueId original = -1;   // its forward twin
  size_t clone_eq = 0;         // the recomputing equation (in the top level or the backward body)
  size_t original_eq = 0;      // the forward equation (in the top level or the forward body)
  bool candidate = false;
  int stacked = -1;  // >= 0: a stacked residual, this result index of the forward scan (no clone)
  // A top-level value read early and late (fit_to_limit, no clone): the equations (by their first
  // result) that read it late; offloaded, they read a copy fetched back instead. Saved or offloaded.
  std::vector<ir::ValueId> late_readers;
};

// A split entry for value v of `program` (defined by equation `producer`) whose readers
// `late_readers` (by first result) may read a fetched-back copy.
Twin split_entry(ir::ValueId v, size_t producer, std::vector<ir::ValueId> late_readers);

struct Twins {
  std::vector<ScanPair> pairs;
  std::vector<Twin> twins;
  // Per top-level value: the forward value it equals (itself unless it is a recomputation with a
  // twin). A backward scan may read a whole recomputation of its forward scan's results.
  std::vector<ir::ValueId> top;
  bool empty() const { return twins.empty(); }
};

// Stacked residuals are listed for scan pairs whose backward body has automatic equations, and,
// with `fit_to_limit`, for those whose backward body recomputes nothing (no checkpoint decided
// what they keep: explicit policies' decisions stay).
Twins find_twins(const ir::Program& program, bool fit_to_limit = false);

// Whether the program or a body in it has automatic equations.
bool has_automatic(const ir::Program& program);
// Whether any equation of `program` (or of its first bodies) is a recomputation.
bool has_remat(const ir::Program& program);

enum class TwinChoice : uint8_t { save, offload, recompute };

// The program with every candidate's choice made (one per twin; those of other twins are ignored),
// offloads to `host`. Unused scan operands and results are pruned and dead code removed.
// `stacked`, if given, receives per twin of a scan pair the top-level value its forward scan
// stacks it in (-1: none, or not saved or offloaded).
std::shared_ptr<ir::Program> apply_twin_choices(const ir::Program& program, const Twins& twins,
                                                const std::vector<TwinChoice>& choices,
                                                MemoryKind host = MemoryKind::pinned_host,
                                                std::vector<ir::ValueId>* stacked = nullptr);

}  // namespace ferry::compiler
