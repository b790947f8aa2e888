#include "compiler/fuse.h"

#include <algorithm>
#include <functional>
#include <memory>

#include "ferry/error.h"
#include "prims/fused_body.h"

namespace ferry::compiler {
namespace {


bool fusible_type(const ir::Type& t) {
  return (t.dtype == DType::f32 || t.dtype == DType::boolean || t.dtype == DType::i32) && t.kind == MemoryKind::device;
}

// Whether eq may join a group (its shapes are checked when the group's body is laid out).
bool candidate(const ir::Program& p, const ir::Equation& eq) {
  // threefry2x32 is one fused step with its two words; every other member makes one value.
  const size_t num_out = eq.prim == Primitive::threefry2x32 ? 2 : 1;
  if (!prims::fusible_primitive(eq.prim) || eq.prim == Primitive::constant || !eq.subprograms.empty() ||
      eq.outputs.size() != num_out)
    return false;
  for (ir::ValueId v : eq.inputs)
    if (!fusible_type(p.type(v))) return false;
  for (ir::ValueId v : eq.outputs)
    if (!fusible_type(p.type(v))) return false;
  // A reshape joins only on i32 values (random counters: reshape(iota)); an f32 activation's
  // reshape stays a kernel of its own, which runs in place where its operand dies there.
  if (eq.prim == Primitive::reshape && p.type(eq.outputs[0]).dtype != DType::i32) return false;
  if (eq.prim == Primitive::reduce_sum || eq.prim == Primitive::reduce_max || eq.prim == Primitive::reduce_min) {
    const ir::Type& x = p.type(eq.inputs[0]);
    return x.num_elements() / std::max<int64_t>(1, p.type(eq.outputs[0]).num_elements()) <= prims::kFusedBlock;
  }
  return true;
}

// A group runs where its last member was. So that nothing outside reads its values before that,
// a group takes no new member once an equation outside it has read one of its values (it is
// `closed`); then every value a group reads was defined before its place, and groups never wait
// on each other in a cycle.
struct Group {
  std::vector<size_t> members;  // equation indices, in program order
  bool closed = false;
};

class Fuser {
 public:
  explicit Fuser(ir::Program& p) : p_(p) {
    const size_t nv = p.values.size();
    def_.assign(nv, -1);
    group_of_value_.assign(nv, -1);
    for (size_t e = 0; e < p.equations.size(); ++e)
      for (ir::ValueId v : p.equations[e].outputs) def_[static_cast<size_t>(v)] = static_cast<int>(e);
    free_.assign(p.equations.size(), 0);
  }

  bool run() {
    for (size_t e = 0; e < p_.equations.size(); ++e) visit(e);
    std::erase_if(groups_, [](const Group& g) { return g.members.size() < 2; });
    if (groups_.empty()) return false;
    rewrite();
    return true;
  }

 private:
  bool is_constant(ir::ValueId v) const {
    const int d = def_[static_cast<size_t>(v)];
    return d >= 0 && p_.equations[static_cast<size_t>(d)].prim == Primitive::constant;
  }
  // A broadcast of a value from outside every group: each group that reads it gets its own copy
  // (a strided read of the smaller operand), so it starts no group of its own.
  bool is_free(ir::ValueId v) const {
    const int d = def_[static_cast<size_t>(v)];
    return d >= 0 && free_[static_cast<size_t>(d)];
  }

  void visit(size_t e) {
    const ir::Equation& eq = p_.equations[e];
    // Groups whose values eq reads, the latest first.
    std::vector<int> producers;
    for (ir::ValueId v : eq.inputs) {
      const int g = group_of_value_[static_cast<size_t>(v)];
      if (g >= 0 && std::find(producers.begin(), producers.end(), g) == producers.end()) producers.push_back(g);
    }
    std::sort(producers.rbegin(), producers.rend());
    int joined = -1;
    if (eq.prim == Primitive::broadcast_in_dim && producers.empty() && candidate(p_, eq)) {
      free_[e] = 1;
      return;
    }
    if (candidate(p_, eq)) {
      joined = try_merge(producers, e);
      for (size_t i = 0; i < producers.size() && joined < 0; ++i)
        if (try_join(producers[i], e)) joined = producers[i];
      if (joined < 0) {
        groups_.push_back(Group{{e}});
        joined = static_cast<int>(groups_.size() - 1);
      }
      for (ir::ValueId v : eq.outputs) group_of_value_[static_cast<size_t>(v)] = joined;
    }
    for (int g : producers)
      if (g != joined) groups_[static_cast<size_t>(g)].closed = true;
  }

  // Joins e and every open group it reads into one (the latest of them), when there are several
  // and the union is a valid body: open groups have no outside readers yet, so the union can run
  // where its last member was. Returns that group, or -1.
  int try_merge(const std::vector<int>& producers, size_t e) {
    std::vector<int> open;
    for (int g : producers)
      if (!groups_[static_cast<size_t>(g)].closed) open.push_back(g);
    if (open.size() < 2) return -1;
    std::vector<size_t> members{e};
    for (int g : open) members.insert(members.end(), groups_[static_cast<size_t>(g)].members.begin(),
                                      groups_[static_cast<size_t>(g)].members.end());
    std::sort(members.begin(), members.end());
    if (!valid(members, e)) return -1;
    const int into = open.front();  // the latest group
    for (int g : open) groups_[static_cast<size_t>(g)].members.clear();
    groups_[static_cast<size_t>(into)].members = std::move(members);
    for (size_t m : groups_[static_cast<size_t>(into)].members)
      for (ir::ValueId v : p_.equations[m].outputs) group_of_value_[static_cast<size_t>(v)] = into;
    return into;
  }

  bool valid(const std::vector<size_t>& members, size_t e) const {
    try {
      prims::fused_layout(*body_of(members, {p_.equations[e].outputs[0]}, nullptr));
    } catch (const Error& err) {
      if (err.code() != ErrorCode::invalid_argument) throw;
      return false;
    }
    return true;
  }

  bool try_join(int gi, size_t e) {
    Group& g = groups_[static_cast<size_t>(gi)];
    if (g.closed) return false;
    std::vector<size_t> members = g.members;
    members.push_back(e);
    if (!valid(members, e)) return false;
    g.members = std::move(members);
    return true;
  }

  // The body of a group: its outside values as inputs (in order of first use), constants copied
  // in, members in order, `results` returned. `inputs_out` receives the outside values.
  std::shared_ptr<ir::Program> body_of(const std::vector<size_t>& members, const std::vector<ir::ValueId>& results,
                                       std::vector<ir::ValueId>* inputs_out) const {
    auto body = std::make_shared<ir::Program>();
    body->name = "fused";
    std::vector<ir::ValueId> inner(p_.values.size(), -1);
    std::vector<char> member_value(p_.values.size(), 0);
    for (size_t e : members)
      for (ir::ValueId v : p_.equations[e].outputs) member_value[static_cast<size_t>(v)] = 1;
    std::vector<ir::ValueId> outside;
    // Values from outside: constants and free broadcasts are copied in, the rest are inputs.
    std::function<void(ir::ValueId)> bring = [&](ir::ValueId v) {
      if (member_value[static_cast<size_t>(v)] || inner[static_cast<size_t>(v)] >= 0) return;
      if (is_constant(v) || is_free(v)) {
        ir::Equation c = p_.equations[static_cast<size_t>(def_[static_cast<size_t>(v)])];
        for (ir::ValueId& u : c.inputs) {
          bring(u);
          u = inner[static_cast<size_t>(u)];
        }
        inner[static_cast<size_t>(v)] = body->add_value(p_.type(v));
        c.outputs = {inner[static_cast<size_t>(v)]};
        body->equations.push_back(std::move(c));
      } else {
        inner[static_cast<size_t>(v)] = body->add_value(p_.type(v));
        body->inputs.push_back(inner[static_cast<size_t>(v)]);
        outside.push_back(v);
      }
    };
    for (size_t e : members)
      for (ir::ValueId v : p_.equations[e].inputs) bring(v);
    for (size_t e : members) {
      ir::Equation eq = p_.equations[e];
      for (ir::ValueId& v : eq.inputs) v = inner[static_cast<size_t>(v)];
      for (ir::ValueId& v : eq.outputs) {
        const ir::ValueId outer = v;
        v = body->add_value(p_.type(outer));
        inner[static_cast<size_t>(outer)] = v;
      }
      body->equations.push_back(std::move(eq));
    }
    for (ir::ValueId v : results) body->outputs.push_back(inner[static_cast<size_t>(v)]);
    if (inputs_out) *inputs_out = std::move(outside);
    return body;
  }

  void rewrite() {
    const size_t n = p_.equations.size();
    std::vector<int> group_of_eq(n, -1);
    for (size_t g = 0; g < groups_.size(); ++g)
      for (size_t e : groups_[g].members) group_of_eq[e] = static_cast<int>(g);
    // Results: member values read outside their group or returned.
    std::vector<std::vector<ir::ValueId>> results(groups_.size());
    std::vector<char> read_outside(p_.values.size(), 0);
    for (size_t e = 0; e < n; ++e)
      for (ir::ValueId v : p_.equations[e].inputs) {
        const int d = def_[static_cast<size_t>(v)];
        if (d >= 0 && group_of_eq[static_cast<size_t>(d)] >= 0 && group_of_eq[static_cast<size_t>(d)] != group_of_eq[e])
          read_outside[static_cast<size_t>(v)] = 1;
      }
    for (ir::ValueId v : p_.outputs) read_outside[static_cast<size_t>(v)] = 1;
    for (size_t g = 0; g < groups_.size(); ++g)
      for (size_t e : groups_[g].members)
        for (ir::ValueId v : p_.equations[e].outputs)
          if (read_outside[static_cast<size_t>(v)]) results[g].push_back(v);
    // Fused equations, each where its last member was.
    std::vector<std::vector<ir::Equation>> at(n);
    for (size_t g = 0; g < groups_.size(); ++g) {
      ir::Equation fused;
      fused.prim = Primitive::fused;
      fused.params = ir::NoParams{};
      fused.rematerialized = std::all_of(groups_[g].members.begin(), groups_[g].members.end(),
                                         [&](size_t m) { return p_.equations[m].rematerialized; });
      std::shared_ptr<ir::Program> body = body_of(groups_[g].members, results[g], &fused.inputs);
      fused.outputs = results[g];
      fused.subprograms.push_back(std::move(body));
      at[groups_[g].members.back()].push_back(std::move(fused));
    }
    std::vector<ir::Equation> out;
    out.reserve(n);
    for (size_t e = 0; e < n; ++e) {
      if (group_of_eq[e] < 0) out.push_back(std::move(p_.equations[e]));
      for (ir::Equation& f : at[e]) out.push_back(std::move(f));
    }
    // Constants and free broadcasts that only fused groups read are now dead (a broadcast first,
    // then what it read).
    std::vector<int> readers(p_.values.size(), 0);
    for (const ir::Equation& eq : out)
      for (ir::ValueId v : eq.inputs) ++readers[static_cast<size_t>(v)];
    for (ir::ValueId v : p_.outputs) ++readers[static_cast<size_t>(v)];
    std::vector<char> dead(out.size(), 0);
    for (size_t i = out.size(); i-- > 0;) {
      const ir::Equation& eq = out[i];
      const bool copyable = eq.prim == Primitive::constant || (eq.prim == Primitive::broadcast_in_dim && is_free(eq.outputs[0]));
      if (!copyable || readers[static_cast<size_t>(eq.outputs[0])] != 0) continue;
      dead[i] = 1;
      for (ir::ValueId v : eq.inputs) --readers[static_cast<size_t>(v)];
    }
    std::vector<ir::Equation> live;
    live.reserve(out.size());
    for (size_t i = 0; i < out.size(); ++i)
      if (!dead[i]) live.push_back(std::move(out[i]));
    p_.equations = std::move(live);
  }

  ir::Program& p_;
  std::vector<int> def_;             // by value: the equation that defines it, -1 for inputs
  std::vector<int> group_of_value_;  // by value: the group whose member defines it
  std::vector<char> free_;           // by equation: a free broadcast (is_free)
  std::vector<Group> groups_;
};

}  // namespace

bool fuse_elementwise(ir::Program& program) {
  bool changed = false;
  for (ir::Equation& eq : program.equations) {
    if (eq.prim == Primitive::fused) continue;  // already one loop
    for (auto& body : eq.subprograms) {
      auto copy = std::make_shared<ir::Program>(*body);
      if (fuse_elementwise(*copy)) {
        body = copy;
        changed = true;
      }
    }
  }
  return Fuser(program).run() || changed;
}

}  // namespace ferry::compiler
