// Random well-typed programs for property tests. A program is generated as data first (a Block of
// Ops over f64 values with known shapes), then emitted through ferry's public tracing API. Keeping
// it as data lets the same program be emitted with and without its checkpoints, listed, and shrunk.
// Generation is seeded and portable: the same (seed, size) gives the same program everywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/ferry.h"

namespace ferry::property {

// A checkpoint policy as data: a built-in one, a combination, or a seeded custom one.
struct PolicySpec {
  enum Kind {
    everything, nothing, dots, dots_no_batch, offload_dots, save_names, save_all_but_names,
    save_and_offload_names, both, custom,
    automatic  // never generated; with_policy() puts it on every checkpoint
  };
  Kind kind = nothing;
  std::vector<std::string> saved, offloaded;  // names for the name-based policies
  MemoryKind dst = MemoryKind::pinned_host;   // where offloading policies send values
  uint32_t salt = 0;                          // custom: which decision each equation gets
  std::shared_ptr<PolicySpec> a, b;           // both: the two combined
};

struct Block;

enum class OpKind {
  unary, binary, dot, reduce, reshape, transpose, broadcast, slice, dynamic_slice, dynamic_update_slice,
  concatenate, host_round_trip, name, checkpoint, scan
};

// One operation. Its operands are indices into the enclosing block's values (inputs, then captured
// values, then the outputs of earlier ops in order); it appends `outs.size()` values.
struct Op {
  OpKind kind = OpKind::unary;
  int code = 0;             // unary/binary/reduce: which function; host_round_trip: which host kind
  std::vector<int> args;
  Axes p1, p2, p3;          // per kind: axes, starts, limits, strides, permutation, dot dims...
  std::string name;         // name: the checkpoint_name
  PolicySpec policy;        // checkpoint
  std::shared_ptr<Block> body;  // checkpoint, scan
  int64_t length = 0;       // scan: steps
  bool reverse = false;     // scan
  int carries = 0;          // scan: how many of args (and of the body's outputs) are carries
  std::vector<Shape> outs;  // the shapes of the values it appends
};

// A straight-line block: inputs, values captured from the enclosing block, ops, outputs.
struct Block {
  std::vector<Shape> inputs;
  std::vector<int> captures;  // indices into the enclosing block's values
  std::vector<Shape> capture_shapes;
  std::vector<Op> ops;
  std::vector<int> outputs;   // indices into this block's values
  // Shapes of every value, in index order.
  std::vector<Shape> value_shapes() const;
  // Number of ops, nested bodies included.
  int size() const;
};

// A whole program: f64 arguments and a main block whose outputs are summed into the scalar loss.
struct RandomProgram {
  uint32_t seed = 0;
  int size = 0;
  std::vector<Shape> arguments;
  Block main;
};

RandomProgram generate_program(uint32_t seed, int size);

// The loss: sum of sum(output) over the main block's outputs, an f64 scalar. With checkpoints=false
// every checkpoint is inlined (the same program, no rematerialization).
Tensor emit_loss(const RandomProgram& p, const std::vector<Tensor>& args, bool checkpoints);

// The Policy a spec describes.
Policy make_policy(const PolicySpec& spec);
// The same program with every checkpoint (nested ones too) under the policy `kind`.
RandomProgram with_policy(const RandomProgram& p, PolicySpec::Kind kind);
// Whether the program has a checkpoint anywhere.
bool has_checkpoint(const Block& b);
std::string describe(const PolicySpec& spec);

// A readable listing of the program (ops, shapes, policies), for failure reports.
std::string describe(const RandomProgram& p);

}  // namespace ferry::property
