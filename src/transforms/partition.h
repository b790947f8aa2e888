// Partitioning a joint program into a forward and a backward program: the core of every VJP that
// must decide what its backward pass keeps (scan, checkpoint).
//
// The joint program J(primals..., cotangents...) -> (primal outputs..., cotangent outputs...) is a
// linearized body. Its equations that depend on no cotangent and on no equation marked rematerialized,
// form the forward part; the others form the backward part. A forward value the backward part
// reads is, by the decision recorded on its equation (or `default_kind` where none is):
// - saved: a residual, an output of the forward program and an input of the backward one;
// - offloaded: the forward program copies it to the destination memory kind and outputs that copy;
//   the backward program takes the copy and fetches it back first (a rematerialized device_put);
// - recomputed: its equation is copied into the backward program (marked rematerialized when
//   prevent_cse), and what it reads is needed in turn.
// Loop-invariant values (functions of invariant inputs and literals only) are always recomputed.
// Where the backward part reads a value that a checkpoint_name names and the name's decision keeps
// (saved or offloaded), it reads the named value instead: the same numbers, so the policy's choice
// is the one that takes effect and the original is not recomputed.
#pragma once

#include <memory>
#include <vector>

#include "ir/program.h"

namespace ferry::transforms {

struct PartitionSpec {
  const ir::Program* joint = nullptr;
  size_t num_primal_inputs = 0;
  size_t num_primal_outputs = 0;
  std::vector<char> invariant_inputs;  // per primal input; empty: none
  ir::RematDecision::Kind default_kind = ir::RematDecision::Kind::save;
  bool prevent_cse = true;
  // Work only the backward part reads (a VJP rule's, on primal values) moves to the backward part
  // when that keeps fewer bytes (see partition.cpp): always for equations a policy decided to save;
  // for those saved by default only when this is set (a scan's default would otherwise trade
  // stacked residuals for temporaries of its backward body, which is not always a gain).
  bool defer_default_saves = false;
};

struct PartitionResidual {
  ir::ValueId value = -1;  // the joint program's value the backward part needs
  int input_index = -1;    // >= 0: that value is primal input #input_index of the joint program
  bool offloaded = false;
  MemoryKind dst = MemoryKind::pinned_host;  // offloaded: where it waits
};

struct Partition {
  std::vector<PartitionResidual> residuals;  // primal-input residuals first, then the others
  // (primal inputs) -> (primal outputs..., one per residual that is not an input: the value, or its
  // offloaded copy)
  std::shared_ptr<ir::Program> forward;
  // (one per residual, offloaded ones in their destination kind..., cotangent inputs...) ->
  // (cotangent outputs...)
  std::shared_ptr<ir::Program> backward;
};

Partition partition(const PartitionSpec& spec);

// Copies equations of one program into a new one, renumbering values.
class ProgramCopier {
 public:
  ProgramCopier(const ir::Program& src, std::string name);
  ir::ValueId add_input(ir::ValueId src_value);
  ir::ValueId add_input_of_type(const ir::Type& t, ir::ValueId src_value = -1);
  ir::ValueId map(ir::ValueId src_value) const;  // INTERNAL if the value was never mapped
  void bind(ir::ValueId src_value, ir::ValueId new_value);
  // Copies eq with its inputs renamed; its outputs get new values.
  ir::Equation& copy(const ir::Equation& eq);
  // Appends a new equation prim(inputs) -> one output of type `out`.
  ir::ValueId append(Primitive prim, ir::Params params, std::vector<ir::ValueId> inputs, const ir::Type& out);
  ir::Program& program() { return *out_; }
  // Runs DCE and returns the program.
  std::shared_ptr<ir::Program> finish();

 private:
  const ir::Program& src_;
  std::vector<ir::ValueId> map_;
  std::shared_ptr<ir::Program> out_;
};

}  // namespace ferry::transforms
