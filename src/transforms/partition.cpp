#include "transforms/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <concepts>
#include <functional>
#include <limits>

#include "ir/dce.h"
#include "ferry/error.h"

namespace ferry::transforms {

using ir::RematDecision;
using ir::ValueId;

namespace {
constexpr size_t idx(std::integral auto i) { return static_cast<size_t>(i); }
}  // namespace

ProgramCopier::ProgramCopier(const ir::Program& src, std::string name) : src_(src), map_(src.values.size(), -1) {
  out_ = std::make_shared<ir::Program>();
  out_->name = std::move(name);
}

ValueId ProgramCopier::add_input(ValueId src_value) { return add_input_of_type(src_.type(src_value), src_value); }

ValueId ProgramCopier::add_input_of_type(const ir::Type& t, ValueId src_value) {
  ValueId v = out_->add_value(t);
  out_->inputs.push_back(v);
  if (src_value >= 0) map_[idx(src_value)] = v;
  return v;
}

ValueId ProgramCopier::map(ValueId src_value) const {
  ValueId v = map_[idx(src_value)];
  if (v < 0) throw Error(ErrorCode::internal, fmt::format("partition: value %{} is not available in {}", src_value, out_->name));
  return v;
}

void ProgramCopier::bind(ValueId src_value, ValueId new_value) { map_[idx(src_value)] = new_value; }

ir::Equation& ProgramCopier::copy(const ir::Equation& eq) {
  ir::Equation e = eq;
  for (ValueId& v : e.inputs) v = map(v);
  for (ValueId& v : e.outputs) {
    ValueId nv = out_->add_value(src_.type(v));
    map_[idx(v)] = nv;
    v = nv;
  }
  out_->equations.push_back(std::move(e));
  return out_->equations.back();
}

ValueId ProgramCopier::append(Primitive prim, ir::Params params, std::vector<ValueId> inputs, const ir::Type& out) {
  ir::Equation e;
  e.prim = prim;
  e.params = std::move(params);
  e.inputs = std::move(inputs);
  e.outputs = {out_->add_value(out)};
  out_->equations.push_back(e);
  return e.outputs[0];
}

std::shared_ptr<ir::Program> ProgramCopier::finish() {
  ir::eliminate_dead_code(*out_);
  return out_;
}

namespace {

// The equations the primal outputs need (none that depends on a cotangent), from the outputs back.
std::vector<char> primal_outputs_cone(const ir::Program& J, const PartitionSpec& spec) {
  const size_t nv = J.values.size(), ne = J.equations.size();
  std::vector<char> depends_on_tangent(nv, 0), wanted(nv, 0), eq_tangent(ne, 0), cone(ne, 0);
  for (size_t i = spec.num_primal_inputs; i < J.inputs.size(); ++i) depends_on_tangent[idx(J.inputs[i])] = 1;
  for (size_t e = 0; e < ne; ++e) {
    for (ValueId v : J.equations[e].inputs) eq_tangent[e] = eq_tangent[e] || depends_on_tangent[idx(v)];
    for (ValueId v : J.equations[e].outputs) depends_on_tangent[idx(v)] = eq_tangent[e];
  }
  for (size_t i = 0; i < spec.num_primal_outputs; ++i) wanted[idx(J.outputs[i])] = 1;
  for (size_t e = ne; e-- > 0;) {
    if (eq_tangent[e]) continue;
    for (ValueId v : J.equations[e].outputs) cone[e] = cone[e] || wanted[idx(v)];
    if (cone[e])
      for (ValueId v : J.equations[e].inputs) wanted[idx(v)] = 1;
  }
  return cone;
}

// Forward equations whose results only the backward part reads (work a VJP rule does on primal
// values, such as 1 - tanh(x)^2) cost the same computed in either part. Saved, they are residuals;
// deferred to the backward part they are computed there from what they read, once either way. A
// connected group of such equations is deferred when what it reads from outside the group and the
// backward part does not already keep takes no more bytes than the residuals it stops producing.
// `kept(v)`: the backward part already reads v (or the name of it); `saved(eq)`: the equation's
// decision is save (offloads and names keep the policy's choice).
std::vector<char> deferrable(const ir::Program& J, const std::vector<char>& primal, const std::vector<char>& backward,
                             const std::vector<char>& eq_invariant, const std::function<bool(ValueId)>& kept,
                             const std::function<bool(const ir::Equation&)>& saved) {
  const size_t nv = J.values.size(), ne = J.equations.size();
  std::vector<int> producer(nv, -1);
  for (size_t e = 0; e < ne; ++e)
    for (ValueId v : J.equations[e].outputs) producer[idx(v)] = static_cast<int>(e);
  std::vector<char> candidate(ne, 0);
  for (size_t e = 0; e < ne; ++e) {
    const ir::Equation& eq = J.equations[e];
    // Copies between memory kinds stay where they are: an offload is the policy's to decide.
    candidate[e] = !backward[e] && !primal[e] && !eq_invariant[e] && eq.subprograms.empty() && eq.outputs.size() == 1 &&
                   eq.prim != Primitive::device_put && saved(eq);
  }
  // Groups: candidates joined through the values one reads from another (union-find).
  std::vector<size_t> group(ne);
  for (size_t e = 0; e < ne; ++e) group[e] = e;
  std::function<size_t(size_t)> root = [&](size_t e) { return group[e] == e ? e : group[e] = root(group[e]); };
  for (size_t e = 0; e < ne; ++e) {
    if (!candidate[e]) continue;
    for (ValueId v : J.equations[e].inputs) {
      int p = producer[idx(v)];
      if (p >= 0 && candidate[idx(p)]) group[root(idx(p))] = root(e);
    }
  }
  // Device bytes: what a residual costs where the limit is.
  auto bytes = [&](ValueId v) { return J.type(v).kind == MemoryKind::device ? J.type(v).size_bytes() : 0; };
  std::vector<int64_t> freed(ne, 0), added(ne, 0);
  std::vector<char> counted(nv, 0);
  for (size_t e = 0; e < ne; ++e) {
    if (!candidate[e]) continue;
    size_t g = root(e);
    ValueId out = J.equations[e].outputs[0];
    if (kept(out)) freed[g] += bytes(out);
    for (ValueId v : J.equations[e].inputs) {
      int p = producer[idx(v)];
      bool inside = p >= 0 && candidate[idx(p)];
      bool free = p >= 0 && eq_invariant[idx(p)];
      if (inside || free || kept(v) || counted[idx(v)]) continue;
      counted[idx(v)] = 1;  // a new residual, counted once (shared: a lower bound)
      added[g] += bytes(v);
    }
  }
  std::vector<char> defer(ne, 0);
  for (size_t e = 0; e < ne; ++e)
    defer[e] = candidate[e] && added[root(e)] < freed[root(e)];
  return defer;
}

// Splits the joint program of `spec` in the steps partition() runs, each a member below.
class Partitioner {
 public:
  explicit Partitioner(const PartitionSpec& spec)
      : spec_(spec), J_(*spec.joint), nv_(J_.values.size()), ne_(J_.equations.size()), deferred_(ne_, 0) {}

  // backward_[e]: equation e belongs to the backward part: it depends on a cotangent, or it is a
  // rematerialized equation (a nested checkpoint's recomputation) that the primal outputs do not
  // need. eq_invariant_[e]: a forward equation that depends only on invariant inputs (or nothing).
  void classify_equations() {
    // Tangent: depends on a cotangent input. Invariant: depends only on invariant inputs (or nothing).
    std::vector<char> tangent(nv_, 0), invariant(nv_, 0);
    for (size_t i = 0; i < J_.inputs.size(); ++i) {
      const size_t v = idx(J_.inputs[i]);
      if (i >= spec_.num_primal_inputs) tangent[v] = 1;
      else if (i < spec_.invariant_inputs.size() && spec_.invariant_inputs[i]) invariant[v] = 1;
    }
    // A rematerialized equation belongs to the backward part (a nested checkpoint's recomputation),
    // unless the primal outputs need it: differentiating a backward program (second order) replays
    // its recomputations as part of its primal computation.
    primal_cone_ = primal_outputs_cone(J_, spec_);
    backward_.assign(ne_, 0);
    eq_invariant_.assign(ne_, 0);
    for (size_t e = 0; e < ne_; ++e) {
      const ir::Equation& eq = J_.equations[e];
      bool t = false, inv = true;
      for (ValueId v : eq.inputs) {
        t = t || tangent[idx(v)];
        inv = inv && invariant[idx(v)];
      }
      backward_[e] = t || (eq.rematerialized && !primal_cone_[e]);
      eq_invariant_[e] = !backward_[e] && inv;
      for (ValueId v : eq.outputs) {
        // What reads a rematerialized value is backward too: that value exists only there (e.g. a
        // nested checkpoint's recomputation feeding a cotangent that is all zeros).
        tangent[idx(v)] = backward_[e];
        invariant[idx(v)] = eq_invariant_[e];
      }
    }
  }

  // A value the user named and the policy keeps (saved or offloaded) is the value the backward part
  // reads wherever it would read the unnamed original: a VJP rule reads tanh's output, not the
  // checkpoint_name of it, and both are the same numbers. Without this the named copy would be kept
  // and the original recomputed anyway (with everything it needs). Sets what read_as follows.
  void follow_kept_names() {
    named_as_.resize(nv_);
    named_at_.assign(nv_, ne_);
    for (size_t v = 0; v < nv_; ++v) named_as_[v] = static_cast<ValueId>(v);
    for (size_t e = 0; e < ne_; ++e) {
      const ir::Equation& eq = J_.equations[e];
      if (eq.prim != Primitive::checkpoint_name || backward_[e] || eq_invariant_[e] ||
          kind_of(eq) == RematDecision::Kind::recompute || kind_of(eq) == RematDecision::Kind::automatic)
        continue;
      named_as_[idx(eq.inputs[0])] = eq.outputs[0];
      named_at_[idx(eq.inputs[0])] = e;
    }
  }

  // What the backward part reads (needed_), then what each forward equation's decision makes of it,
  // from the last equation back: recomputed (recompute_, and what it reads is needed in turn) or a
  // residual (computed_). A deferred equation runs in the backward part instead of the forward one.
  void decide() {
    needed_.assign(nv_, 0);
    recompute_.assign(ne_, 0);
    computed_.clear();
    for (size_t e = 0; e < ne_; ++e)
      if (backward_[e])
        for (ValueId v : J_.equations[e].inputs) needed_[idx(read_as(v))] = 1;
    for (size_t i = spec_.num_primal_outputs; i < J_.outputs.size(); ++i) needed_[idx(read_as(J_.outputs[i]))] = 1;
    for (size_t e = ne_; e-- > 0;) {
      if (backward_[e]) continue;
      const ir::Equation& eq = J_.equations[e];
      bool used = false;
      for (ValueId v : eq.outputs) used = used || needed_[idx(v)];
      if (!used) continue;
      RematDecision::Kind kind = kind_of(eq);
      // An automatic decision is a recomputation here, marked so that the compiler, which knows the
      // limit, may save or offload the value instead (compiler/auto_plan.h).
      if (eq_invariant_[e] || kind == RematDecision::Kind::recompute || kind == RematDecision::Kind::automatic ||
          deferred_[e] || (kind == RematDecision::Kind::save && expands(eq))) {
        recompute_[e] = 1;
        for (ValueId v : eq.inputs) needed_[idx(read_as(v, e))] = 1;
        continue;
      }
      for (auto it = eq.outputs.rbegin(); it != eq.outputs.rend(); ++it) {
        if (!needed_[idx(*it)]) continue;
        PartitionResidual r;
        r.value = *it;
        r.offloaded = kind == RematDecision::Kind::offload && eq.decision.dst != J_.type(*it).kind;
        r.dst = eq.decision.dst;
        computed_.push_back(r);
      }
    }
  }

  // Forward work that only the backward part reads moves there where that keeps fewer bytes
  // (deferrable), and the decisions are made again with it moved.
  void defer_backward_only_work() {
    auto kept = [&](ValueId v) { return needed_[idx(read_as(v))] != 0; };
    deferred_ = deferrable(J_, primal_cone_, backward_, eq_invariant_, kept, [&](const ir::Equation& eq) {
      RematDecision::Kind kind = spec_.defer_default_saves ? kind_of(eq) : eq.decision.kind;
      return kind == RematDecision::Kind::save && eq.prim != Primitive::checkpoint_name;
    });
    if (std::find(deferred_.begin(), deferred_.end(), 1) != deferred_.end()) decide();
  }

  // The primal inputs the backward part reads, then the residuals forward equations compute, in
  // program order.
  std::vector<PartitionResidual> residuals() const {
    std::vector<PartitionResidual> out;
    for (size_t i = 0; i < spec_.num_primal_inputs; ++i)
      if (needed_[idx(J_.inputs[i])]) out.push_back({J_.inputs[i], static_cast<int>(i), false, {}});
    out.insert(out.end(), computed_.rbegin(), computed_.rend());
    return out;
  }

  // The forward program: every forward equation (DCE keeps what the outputs need), then the
  // offloading copies.
  std::shared_ptr<ir::Program> forward_program(const std::vector<PartitionResidual>& residuals) const {
    ProgramCopier fwd(J_, "forward");
    for (size_t i = 0; i < spec_.num_primal_inputs; ++i) fwd.add_input(J_.inputs[i]);
    for (size_t e = 0; e < ne_; ++e)
      if (!backward_[e]) fwd.copy(J_.equations[e]).decision = {};
    for (size_t i = 0; i < spec_.num_primal_outputs; ++i) fwd.program().outputs.push_back(fwd.map(J_.outputs[i]));
    for (const PartitionResidual& r : residuals) {
      if (r.input_index >= 0) continue;
      ValueId v = fwd.map(r.value);
      if (r.offloaded) {
        ir::Type t = J_.type(r.value);
        t.kind = r.dst;
        v = fwd.append(Primitive::device_put, ir::DevicePutParams{r.dst}, {v}, t);
      }
      fwd.program().outputs.push_back(v);
    }
    return fwd.finish();
  }

  // The backward program: residual inputs (fetching offloaded ones back first), cotangent inputs,
  // recomputed and backward equations in their original order.
  std::shared_ptr<ir::Program> backward_program(const std::vector<PartitionResidual>& residuals) const {
    ProgramCopier bwd(J_, "backward");
    std::vector<std::pair<ValueId, ValueId>> fetches;  // (joint value, its offloaded input)
    for (const PartitionResidual& r : residuals) {
      if (!r.offloaded) {
        bwd.add_input(r.value);
        continue;
      }
      ir::Type t = J_.type(r.value);
      t.kind = r.dst;
      fetches.emplace_back(r.value, bwd.add_input_of_type(t));
    }
    for (size_t i = spec_.num_primal_inputs; i < J_.inputs.size(); ++i) bwd.add_input(J_.inputs[i]);
    for (auto [value, host] : fetches) {
      const ir::Type& t = J_.type(value);
      ValueId back = bwd.append(Primitive::device_put, ir::DevicePutParams{t.kind}, {host}, t);
      bwd.program().equations.back().rematerialized = true;  // the fetch belongs to the backward pass
      bwd.bind(value, back);
    }
    // Readers of a named value read the name (a recomputed one that runs before the name was decided
    // reads the original, which is then recomputed and rebinds it: the same numbers).
    for (size_t v = 0; v < nv_; ++v) {
      ValueId named = read_as(static_cast<ValueId>(v));
      if (named != static_cast<ValueId>(v) && needed_[idx(named)]) bwd.bind(static_cast<ValueId>(v), bwd.map(named));
    }
    for (size_t e = 0; e < ne_; ++e) {
      if (!backward_[e] && !recompute_[e]) continue;
      ir::Equation& copy = bwd.copy(J_.equations[e]);
      copy.decision = {};
      if (recompute_[e] && !deferred_[e]) {
        copy.rematerialized = spec_.prevent_cse;
        copy.automatic = copy.rematerialized && kind_of(J_.equations[e]) == RematDecision::Kind::automatic;
      }
    }
    for (size_t i = spec_.num_primal_outputs; i < J_.outputs.size(); ++i)
      bwd.program().outputs.push_back(bwd.map(read_as(J_.outputs[i])));
    return bwd.finish();
  }

 private:
  RematDecision::Kind kind_of(const ir::Equation& eq) const {
    return eq.decision.kind == RematDecision::Kind::none ? spec_.default_kind : eq.decision.kind;
  }

  // What a reader at equation `reader` reads for v. A recomputed forward equation takes a name only
  // when the name comes before it, so that decide() still decides the name's equation.
  ValueId read_as(ValueId v, size_t reader = std::numeric_limits<size_t>::max()) const {
    while (named_as_[idx(v)] != v && named_at_[idx(v)] < reader) v = named_as_[idx(v)];
    return v;
  }

  // A broadcast to more bytes than its operand is recomputed where it would be saved: the backward
  // part keeps the smaller operand and broadcasts it again, which reads nothing else and computes
  // nothing (fusion folds it into its readers). Saved, a scan stacks the full broadcast per step:
  // softmax's row sums broadcast to the scores' shape cost a scores-sized residual per layer.
  bool expands(const ir::Equation& eq) const {
    if (eq.prim != Primitive::broadcast_in_dim || eq.inputs.size() != 1 || eq.outputs.size() != 1) return false;
    const ir::Type &in = J_.type(eq.inputs[0]), &out = J_.type(eq.outputs[0]);
    return in.kind == out.kind && in.size_bytes() < out.size_bytes();
  }

  const PartitionSpec& spec_;
  const ir::Program& J_;
  const size_t nv_, ne_;
  std::vector<char> primal_cone_, backward_, eq_invariant_;  // by equation
  std::vector<ValueId> named_as_;  // by value: the name that stands for it (itself: none)
  std::vector<size_t> named_at_;   // by value: the naming equation's index (ne_: none)
  std::vector<char> needed_;       // by value: the backward part reads it
  std::vector<char> recompute_;    // by equation: recomputed in the backward part
  std::vector<char> deferred_;     // by equation: moved to the backward part (deferrable)
  std::vector<PartitionResidual> computed_;  // residuals forward equations compute, in reverse order
};

}  // namespace

Partition partition(const PartitionSpec& spec) {
  Partitioner parts(spec);
  parts.classify_equations();
  parts.follow_kept_names();
  parts.decide();
  parts.defer_backward_only_work();
  Partition result;
  result.residuals = parts.residuals();
  result.forward = parts.forward_program(result.residuals);
  result.backward = parts.backward_program(result.residuals);
  return result;
}

}  // namespace ferry::transforms
