#include "compiler/fuse.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <optional>

#include "ferry/error.h"
#include "prims/fused_body.h"

namespace ferry::compiler {
namespace {

bool fusible_type(const ir::Type& t) {
  return (t.dtype == DType::f32 || t.dtype == DType::boolean || t.dtype == DType::i32) && t.kind == MemoryKind::device;
}

bool reduction(Primitive p) {
  return p == Primitive::reduce_sum || p == Primitive::reduce_max || p == Primitive::reduce_min;
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
  if (reduction(eq.prim)) {
    const ir::Type& x = p.type(eq.inputs[0]);
    return x.num_elements() / std::max<int64_t>(1, p.type(eq.outputs[0]).num_elements()) <= prims::kFusedBlock;
  }
  return true;
}

// ---- Duplication: what a consumer group may recompute instead of reading ----
//
// XLA's instruction fusion duplicates a producer into each consumer fusion unless the producer is
// "expensive" (FusionWouldDuplicate && IsExpensive: exp, log, tanh, power, reduce, ...; its GPU
// fusion calls f32 divide and rsqrt cheap, since each is one hardware instruction). We follow the
// same rule, priced for this CPU's fused kernel: an *expensive* operation is one that SLEEF computes
// as a polynomial of tens of vector instructions (exp, log, sin, cos, tanh, logistic, erf, log1p,
// expm1, pow; and threefry2x32's 20 rounds); per element that costs more than what materializing a value costs (an f32 store
// and a later load, 8 bytes of memory traffic). Every other fusible operation (add, mul, compare,
// select, div, sqrt, rsqrt, ...) is one or two vector instructions per 8 elements, far less than
// that traffic. Expensive operations and reductions (a pass over a whole row) are never
// duplicated: each is computed once, and a consumer that needs one reads it, so the producer
// materializes it (a reduction's result is only a row).
bool expensive(Primitive p) { return ir::has(p, ir::kExpensive); }  // the op table's Expensive

// Operations that cost a consumer no arithmetic of their own (a broadcast is a strided read, the
// identities are aliases).
bool free_op(Primitive p) {
  return p == Primitive::broadcast_in_dim || p == Primitive::stop_gradient || p == Primitive::checkpoint_name;
}

// The most cheap operations per element of its domain that duplication adds to one consumer, over
// all the producers it recomputes: about the memory traffic it saves (an 8-byte round trip of one
// value is ~2-3 cycles per element from DRAM; the kernel runs a cheap operation over a block in L1
// at a fraction of a cycle per element). It bounds the work a long chain can add to each reader.
// Operations on rows or scalars are one per row, not per element, and do not count.
constexpr int kMaxDuplicatedOps = 16;
// The most equations a recomputed value's cone may hold (free operations and rows included).
constexpr size_t kMaxConeEquations = 64;

// A group runs where its last member was. So that nothing outside reads its values before that,
// a group takes no new member once an equation outside it has read one of its values (it is
// `closed`); then every value a group reads was defined before its place, and groups never wait
// on each other in a cycle.
struct Group {
  std::vector<size_t> members;  // equation indices, in program order
  std::vector<size_t> copies;   // equations of earlier groups it recomputes (duplication), in order
  bool closed = false;
  int duplicated_ops = 0;       // full-width cheap operations among `copies`
  // The layout of the body of members and copies (value_class left empty), kept as the group
  // grows: while a new equation leaves it as it is, only that equation is checked (Fuser::fits).
  // `valid`: they make a valid body (a lone equation may not, e.g. one that reads only constants).
  prims::FusedLayout layout;
  bool valid = false;
};

// Whether equations may join a group without a full check of the grown body: they do, they do
// not, or the layout itself may change (a value larger than the domain, or as large in another
// shape, or a first reduction), which only a check of the whole body decides.
enum class Fit { yes, no, unknown };

// The equations a group computes, in program order (the program's order is a topological one).
std::vector<size_t> computed(const Group& g) {
  std::vector<size_t> eqs = g.members;
  eqs.insert(eqs.end(), g.copies.begin(), g.copies.end());
  std::sort(eqs.begin(), eqs.end());
  return eqs;
}

class Fuser {
 public:
  Fuser(ir::Program& p, FuseStats* stats) : p_(p), stats_(stats) {
    const size_t nv = p.values.size();
    def_.assign(nv, -1);
    group_of_value_.assign(nv, -1);
    for (size_t e = 0; e < p.equations.size(); ++e)
      for (ir::ValueId v : p.equations[e].outputs) def_[static_cast<size_t>(v)] = static_cast<int>(e);
    free_.assign(p.equations.size(), 0);
  }

  bool run() {
    for (size_t e = 0; e < p_.equations.size(); ++e) visit(e);
    // Every candidate has a group; lone ones stay so that a producer can be recomputed in them
    // (they become fused then, else they are left as they were).
    std::erase_if(groups_, [](const Group& g) { return g.members.empty(); });
    index();
    for (size_t g : by_position()) duplicate_from(g);
    return rewrite();
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
  const ir::Equation& def_eq(ir::ValueId v) const {
    return p_.equations[static_cast<size_t>(def_[static_cast<size_t>(v)])];
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
      std::vector<int> joinable;
      for (int g : producers)
        if (!scalars_only_from(g, eq)) joinable.push_back(g);
      joined = try_merge(joinable, e);
      for (size_t i = 0; i < joinable.size() && joined < 0; ++i)
        if (try_join(joinable[i], e)) joined = joinable[i];
      if (joined < 0) {
        Group g{.members = {e}, .copies = {}};
        // A lone equation's layout (its body may be invalid: it stays a group that duplication may
        // still use, and is emitted as the equation it was).
        auto layout = layout_of({e}, e);
        if (layout) g.layout = std::move(*layout);
        g.valid = layout.has_value();
        groups_.push_back(std::move(g));
        joined = static_cast<int>(groups_.size() - 1);
      }
      for (ir::ValueId v : eq.outputs) group_of_value_[static_cast<size_t>(v)] = joined;
    }
    for (int g : producers)
      if (g != joined) groups_[static_cast<size_t>(g)].closed = true;
  }

  // Whether eq, computing more than one element, reads only single elements from group g, which
  // computes more than one element per value: then eq does not join g. Otherwise independent
  // chains that read one shared scalar would become one group through it (AdamW's updates of every
  // leaf read the bias corrections, which are not recomputed: pow is expensive), and one group runs
  // only once all its operands exist, which kept every leaf's gradient alive until the last one was
  // made (a 6-layer MLP's step peaked 32 KiB above its unfused plan). The scalar is then a result
  // of g, 4 bytes.
  bool scalars_only_from(int gi, const ir::Equation& eq) const {
    const Group& g = groups_[static_cast<size_t>(gi)];
    if (!g.valid || num_elements(g.layout.domain) <= 1 || p_.type(eq.outputs[0]).num_elements() <= 1) return false;
    for (ir::ValueId v : eq.inputs)
      if (group_of_value_[static_cast<size_t>(v)] == gi && p_.type(v).num_elements() > 1) return false;
    return true;
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
    // Open groups of one layout take e if it fits that layout; else the union is checked whole.
    const prims::FusedLayout& first = groups_[static_cast<size_t>(open.front())].layout;
    bool same = true;
    for (int g : open) {
      const Group& G = groups_[static_cast<size_t>(g)];
      same = same && G.valid && G.layout.domain == first.domain && G.layout.reduced_axes == first.reduced_axes;
    }
    auto in_union = [&](size_t d) {
      const int g = group_of_value_[static_cast<size_t>(p_.equations[d].outputs[0])];
      return std::find(open.begin(), open.end(), g) != open.end();
    };
    const Fit fit = same ? fits(first, true, {e}, in_union) : Fit::unknown;
    if (fit == Fit::no) return -1;
    prims::FusedLayout merged = first;
    if (fit == Fit::unknown) {
      auto layout = layout_of(members, e);
      if (!layout) return -1;
      merged = std::move(*layout);
    }
    const int into = open.front();  // the latest group
    for (int g : open) groups_[static_cast<size_t>(g)].members.clear();
    groups_[static_cast<size_t>(into)].members = std::move(members);
    groups_[static_cast<size_t>(into)].layout = std::move(merged);
    groups_[static_cast<size_t>(into)].valid = true;
    for (size_t m : groups_[static_cast<size_t>(into)].members)
      for (ir::ValueId v : p_.equations[m].outputs) group_of_value_[static_cast<size_t>(v)] = into;
    return into;
  }

  // The layout of a body of `eqs` (returning e's result), or nothing when it is not a valid body
  // (a fused equation also reads at least one operand: one computed from constants alone is not).
  std::optional<prims::FusedLayout> layout_of(const std::vector<size_t>& eqs, size_t e) const {
    try {
      const std::shared_ptr<ir::Program> body = body_of(eqs, {p_.equations[e].outputs[0]}, nullptr);
      if (body->inputs.empty()) return std::nullopt;
      prims::FusedLayout layout = prims::fused_layout(*body);
      layout.value_class.clear();
      return layout;
    } catch (const Error& err) {
      if (err.code() != ErrorCode::invalid_argument) throw;
      return std::nullopt;
    }
  }

  // Whether the equations `adds` (and the constants and free broadcasts they would copy in) may
  // join a body of layout `layout` whose equations are those for which `computed` holds, checking
  // only them: while every value they add is smaller than the domain, or as large and of its
  // shape, and they reduce the axes the body reduces, the body's layout stays the same, and so do
  // the classes of its values (prims::fused_class); then the new equations decide alone. `reads`
  // says whether the body reads a value from outside already.
  template <class Computed>
  Fit fits(const prims::FusedLayout& layout, bool reads, const std::vector<size_t>& adds, Computed computed) const {
    const int64_t domain = num_elements(layout.domain);
    std::vector<const ir::Equation*> eqs;
    std::vector<ir::ValueId> todo;
    for (size_t e : adds) {
      eqs.push_back(&p_.equations[e]);
      todo.insert(todo.end(), p_.equations[e].inputs.begin(), p_.equations[e].inputs.end());
    }
    while (!todo.empty()) {
      const ir::ValueId v = todo.back();
      todo.pop_back();
      const int d = def_[static_cast<size_t>(v)];
      if (d >= 0 && (computed(static_cast<size_t>(d)) ||
                     std::find(adds.begin(), adds.end(), static_cast<size_t>(d)) != adds.end()))
        continue;
      if (d >= 0 && (is_constant(v) || is_free(v))) {  // copied in
        eqs.push_back(&def_eq(v));
        todo.insert(todo.end(), def_eq(v).inputs.begin(), def_eq(v).inputs.end());
      } else {
        reads = true;
      }
    }
    auto type_of = [&](ir::ValueId v) -> const ir::Type& { return p_.type(v); };
    for (const ir::Equation* eq : eqs) {
      for (const std::vector<ir::ValueId>* vs : {&eq->inputs, &eq->outputs})
        for (ir::ValueId v : *vs) {
          const ir::Type& t = p_.type(v);
          if (t.num_elements() > domain || (t.num_elements() == domain && t.shape != layout.domain)) return Fit::unknown;
        }
      if (reduction(eq->prim) &&
          static_cast<int64_t>(std::get<ir::ReduceParams>(eq->params).axes.size()) != layout.reduced_axes)
        return Fit::unknown;
    }
    if (!reads) return Fit::no;
    try {
      for (const ir::Equation* eq : eqs) prims::check_fused_equation(layout, *eq, type_of);
    } catch (const Error& err) {
      if (err.code() != ErrorCode::invalid_argument) throw;
      return Fit::no;
    }
    return Fit::yes;
  }

  bool try_join(int gi, size_t e) {
    Group& g = groups_[static_cast<size_t>(gi)];
    if (g.closed) return false;
    auto in_group = [&](size_t d) { return group_of_value_[static_cast<size_t>(p_.equations[d].outputs[0])] == gi; };
    const Fit fit = g.valid ? fits(g.layout, true, {e}, in_group) : Fit::unknown;
    if (fit == Fit::no) return false;
    if (fit == Fit::unknown) {
      std::vector<size_t> members = g.members;
      members.push_back(e);
      auto layout = layout_of(members, e);
      if (!layout) return false;
      g.layout = std::move(*layout);
    }
    g.members.push_back(e);
    g.valid = true;
    return true;
  }

  // The body computing `eqs` (in program order): the values they read from outside as inputs (in
  // order of first use), constants and free broadcasts copied in, `results` returned.
  // `inputs_out` receives the outside values.
  std::shared_ptr<ir::Program> body_of(const std::vector<size_t>& eqs, const std::vector<ir::ValueId>& results,
                                       std::vector<ir::ValueId>* inputs_out) const {
    auto body = std::make_shared<ir::Program>();
    body->name = "fused";
    // By outer value: its value in the body (-1: none yet) and whether a member makes it; scratch
    // of the whole program's size, made once and reset below, so a body costs its own size.
    std::vector<ir::ValueId>& inner = inner_scratch_;
    std::vector<char>& member_value = member_scratch_;
    inner.resize(p_.values.size(), -1);
    member_value.resize(p_.values.size(), 0);
    std::vector<ir::ValueId> touched;
    for (size_t e : eqs)
      for (ir::ValueId v : p_.equations[e].outputs) {
        member_value[static_cast<size_t>(v)] = 1;
        touched.push_back(v);
      }
    std::vector<ir::ValueId> outside;
    // Values from outside: constants and free broadcasts are copied in, the rest are inputs.
    std::function<void(ir::ValueId)> bring = [&](ir::ValueId v) {
      if (member_value[static_cast<size_t>(v)] || inner[static_cast<size_t>(v)] >= 0) return;
      touched.push_back(v);
      if (is_constant(v) || is_free(v)) {
        ir::Equation c = def_eq(v);
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
    for (size_t e : eqs)
      for (ir::ValueId v : p_.equations[e].inputs) bring(v);
    for (size_t e : eqs) {
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
    for (ir::ValueId v : touched) {
      inner[static_cast<size_t>(v)] = -1;
      member_value[static_cast<size_t>(v)] = 0;
    }
    if (inputs_out) *inputs_out = std::move(outside);
    return body;
  }

  // ---- after grouping: who reads what, and where ----

  void index() {
    const size_t n = p_.equations.size(), nv = p_.values.size();
    group_of_eq_.assign(n, -1);
    for (size_t g = 0; g < groups_.size(); ++g)
      for (size_t e : groups_[g].members) group_of_eq_[e] = static_cast<int>(g);
    copied_in_.assign(n, {});
    uses_.assign(nv, {});
    for (size_t e = 0; e < n; ++e)
      for (ir::ValueId v : p_.equations[e].inputs) uses_[static_cast<size_t>(v)].push_back(e);
    output_.assign(nv, 0);
    for (ir::ValueId v : p_.outputs) output_[static_cast<size_t>(v)] = 1;
    // Where each value is last read: a group reads where it runs (its last member); a free
    // broadcast or constant is copied into its readers, so it reads where they do.
    const int never = std::numeric_limits<int>::max();
    last_read_.assign(nv, -1);
    for (size_t e = n; e-- > 0;)
      for (ir::ValueId o : p_.equations[e].outputs) {
        int& last = last_read_[static_cast<size_t>(o)];
        if (output_[static_cast<size_t>(o)]) last = never;
        for (size_t u : uses_[static_cast<size_t>(o)]) {
          const bool copied = free_[u] || p_.equations[u].prim == Primitive::constant;
          last = std::max(last, copied ? last_read_[static_cast<size_t>(p_.equations[u].outputs[0])] : place(u));
        }
      }
  }

  // Where equation e runs: its group's place, or its own.
  int place(size_t e) const {
    const int g = group_of_eq_[e];
    return g >= 0 ? static_cast<int>(groups_[static_cast<size_t>(g)].members.back()) : static_cast<int>(e);
  }

  std::vector<size_t> by_position() const {
    std::vector<size_t> order(groups_.size());
    for (size_t g = 0; g < order.size(); ++g) order[g] = g;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return groups_[a].members.back() < groups_[b].members.back(); });
    return order;
  }

  bool computes(size_t g, size_t e) const {
    const Group& G = groups_[g];
    return std::binary_search(G.members.begin(), G.members.end(), e) ||
           std::binary_search(G.copies.begin(), G.copies.end(), e);
  }

  // The groups that read v without computing it; `plain` is set when an ungrouped equation or the
  // program's outputs read it.
  std::vector<size_t> outside_readers(ir::ValueId v, bool& plain) const {
    plain = output_[static_cast<size_t>(v)] != 0;
    std::vector<size_t> readers;
    const int d = def_[static_cast<size_t>(v)];
    auto add = [&](size_t g) {
      if (d >= 0 && computes(g, static_cast<size_t>(d))) return;
      if (std::find(readers.begin(), readers.end(), g) == readers.end()) readers.push_back(g);
    };
    for (size_t e : uses_[static_cast<size_t>(v)]) {
      const int g = group_of_eq_[e];
      if (g >= 0) add(static_cast<size_t>(g));
      else plain = true;
      for (size_t c : copied_in_[e]) add(c);
    }
    return readers;
  }

  bool read_outside(ir::ValueId v) const {
    bool plain = false;
    return !outside_readers(v, plain).empty() || plain;
  }

  // The equations of group g that recompute r from values that stay materialized (`leaves`):
  // values from outside g, and values of g that are expensive, reductions, or read outside g
  // anyway; with `rows_too`, also values of g of another size than r's but a scalar's (rows, for
  // a reader without reductions of its own, which can read a row only through a broadcast). In
  // program order.
  // Returns false when the cone holds more than kMaxConeEquations (too much to recompute anyway;
  // this bounds the pass's work on long chains).
  bool cone(size_t g, ir::ValueId r, bool rows_too, std::vector<size_t>& eqs, std::vector<ir::ValueId>& leaves) const {
    // Scratch of the program's size, made once; what this call marks is unmarked when it returns.
    std::vector<char>& seen = member_scratch_;
    seen.resize(p_.values.size(), 0);
    std::vector<ir::ValueId> marked;
    struct Unmark {
      std::vector<char>& seen;
      std::vector<ir::ValueId>& marked;
      ~Unmark() {
        for (ir::ValueId v : marked) seen[static_cast<size_t>(v)] = 0;
      }
    } unmark{seen, marked};
    std::vector<ir::ValueId> todo{r};  // a stack: chains may be long
    while (!todo.empty()) {
      const ir::ValueId v = todo.back();
      todo.pop_back();
      if (seen[static_cast<size_t>(v)]) continue;
      seen[static_cast<size_t>(v)] = 1;
      marked.push_back(v);
      const int d = def_[static_cast<size_t>(v)];
      if (d < 0 || !computes(g, static_cast<size_t>(d))) {
        if (d >= 0 && is_constant(v)) continue;  // copied into the consumer
        if (d >= 0 && is_free(v)) {              // copied too; it reads its operand
          for (ir::ValueId u : def_eq(v).inputs) todo.push_back(u);
          continue;
        }
        leaves.push_back(v);
        continue;
      }
      const Primitive prim = def_eq(v).prim;
      const int64_t size = p_.type(v).num_elements();
      const bool row = rows_too && size != 1 && size != p_.type(r).num_elements();
      if (v != r && (reduction(prim) || expensive(prim) || row || read_outside(v))) {
        leaves.push_back(v);
        continue;
      }
      eqs.push_back(static_cast<size_t>(d));
      if (eqs.size() > kMaxConeEquations) return false;
      for (ir::ValueId u : def_eq(v).inputs) todo.push_back(u);
    }
    std::sort(eqs.begin(), eqs.end());
    return true;
  }

  // Recomputes r (a value of group g) in every group that reads it, so that g no longer
  // materializes it, when
  // - only groups read it (not an ungrouped equation, not the program's outputs);
  // - it is not expensive or a reduction (see `expensive`);
  // - each reader stays a valid body with the copies, and gets at most kMaxDuplicatedOps cheap
  //   operations per element from duplication in all;
  // - the bytes kept alive longer do not exceed r's: the values the copies read (leaves) must
  //   live until r's last reader; a leaf that was going to die earlier costs its size. (A leaf of
  //   g that nothing outside read before becomes one of g's results.)
  bool try_duplicate(size_t g, ir::ValueId r) {
    const Primitive prim = def_eq(r).prim;
    if (reduction(prim) || expensive(prim)) return false;
    bool plain = false;
    const std::vector<size_t> readers = outside_readers(r, plain);
    if (plain || readers.empty()) return false;
    // The cone, and the one that stops at rows (made when a reader needs it).
    std::vector<size_t> eqs[2];
    std::vector<ir::ValueId> leaves[2];
    bool made[2] = {false, false}, used[2] = {false, false};
    struct Plan {
      size_t group;
      std::vector<size_t> copies;
      int ops;
      prims::FusedLayout layout;
    };
    std::vector<Plan> plans;
    for (size_t x : readers) {
      Group& X = groups_[x];
      Plan plan{x, {}, 0};
      std::optional<prims::FusedLayout> layout;
      for (int rows_too = 0; rows_too < 2 && !layout; ++rows_too) {
        if (!made[rows_too]) {
          if (!cone(g, r, rows_too != 0, eqs[rows_too], leaves[rows_too])) return false;
          made[rows_too] = true;
        }
        plan.copies.clear();
        for (size_t e : eqs[rows_too])
          if (!computes(x, e)) plan.copies.push_back(e);
        const Fit fit =
            X.valid ? fits(X.layout, true, plan.copies, [&](size_t d) { return computes(x, d); }) : Fit::unknown;
        if (fit == Fit::yes) {
          layout = X.layout;
        } else if (fit == Fit::unknown) {
          std::vector<size_t> all = computed(X);
          all.insert(all.end(), plan.copies.begin(), plan.copies.end());
          std::sort(all.begin(), all.end());
          layout = layout_of(all, X.members.back());
        }
        if (layout) used[rows_too] = true;
      }
      if (!layout) return false;
      const int64_t domain = num_elements(layout->domain);
      for (size_t e : plan.copies)
        if (!free_op(p_.equations[e].prim) && p_.type(p_.equations[e].outputs[0]).num_elements() == domain) ++plan.ops;
      if (X.duplicated_ops + plan.ops > kMaxDuplicatedOps) return false;
      plan.layout = std::move(*layout);
      plans.push_back(std::move(plan));
    }
    const int until = last_read_[static_cast<size_t>(r)];
    std::vector<ir::ValueId> kept;  // the leaves some reader reads
    for (int i = 0; i < 2; ++i)
      if (used[i]) kept.insert(kept.end(), leaves[i].begin(), leaves[i].end());
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    int64_t extra = 0;
    for (ir::ValueId l : kept)
      if (def_[static_cast<size_t>(l)] >= 0 && last_read_[static_cast<size_t>(l)] < until) extra += p_.type(l).size_bytes();
    if (extra > p_.type(r).size_bytes()) return false;
    for (Plan& plan : plans) {
      Group& X = groups_[plan.group];
      for (size_t e : plan.copies) copied_in_[e].push_back(plan.group);
      X.copies.insert(X.copies.end(), plan.copies.begin(), plan.copies.end());
      std::sort(X.copies.begin(), X.copies.end());
      X.duplicated_ops += plan.ops;
      X.layout = std::move(plan.layout);
      X.valid = true;
    }
    for (ir::ValueId l : kept) last_read_[static_cast<size_t>(l)] = std::max(last_read_[static_cast<size_t>(l)], until);
    return true;
  }

  // Tries each value of group g, again while that recomputes more (recomputing one value can make
  // another's leaves live long enough anyway).
  void duplicate_from(size_t g) {
    for (int pass = 0; pass < 3; ++pass) {
      bool more = false;
      const std::vector<size_t> members = groups_[g].members;
      for (size_t m : members) more = try_duplicate(g, p_.equations[m].outputs[0]) || more;
      if (!more) return;
    }
  }

  // Emits the groups: each one computes what some reader still needs of it (a member whose values
  // every reader recomputes is dropped) and returns its values read outside it. Returns whether a
  // fused equation was made.
  bool rewrite() {
    const Needed needed = needed_per_group();
    if (!emit_fused(needed)) return false;
    drop_dead_copies();
    return true;
  }

  // Per group: the equations it must compute (its members and copies some reader needs, in program
  // order) and the values it returns (those read outside it).
  struct Needed {
    std::vector<std::vector<size_t>> equations;
    std::vector<std::vector<ir::ValueId>> results;
  };

  // Groups are visited last place first: a group's readers run after it, so what they read of it
  // is settled before it is.
  Needed needed_per_group() const {
    const size_t n = p_.equations.size();
    // Values read by something that does not compute them.
    std::vector<char> read(p_.values.size(), 0);
    for (ir::ValueId v : p_.outputs) read[idx(v)] = 1;
    for (size_t e = 0; e < n; ++e)
      if (group_of_eq_[e] < 0)
        for (ir::ValueId v : p_.equations[e].inputs) read[idx(v)] = 1;
    Needed out;
    out.equations.resize(groups_.size());
    out.results.resize(groups_.size());
    std::vector<size_t> order = by_position();
    std::reverse(order.begin(), order.end());
    std::vector<char> need(n, 0);
    for (size_t g : order) {
      const std::vector<size_t> all = computed(groups_[g]);
      mark_needed(g, read, need, out.results[g]);
      keep_an_operand(g, all, need, !out.results[g].empty());
      for (size_t e : all)
        if (need[e]) {
          need[e] = 0;
          out.equations[g].push_back(e);
          for (ir::ValueId u : p_.equations[e].inputs)
            if (!computes_value(g, u)) read[idx(u)] = 1;
        }
    }
    return out;
  }

  // Marks what group g computes for the values read outside it (all of a lone candidate that
  // recomputes nothing and was recomputed nowhere: it stays as it was), and lists those results.
  void mark_needed(size_t g, const std::vector<char>& read, std::vector<char>& need, std::vector<ir::ValueId>& results) const {
    const Group& G = groups_[g];
    const bool untouched = G.members.size() == 1 && G.copies.empty() && copied_in_[G.members[0]].empty();
    for (size_t m : G.members)
      for (ir::ValueId v : p_.equations[m].outputs) {
        if (!read[idx(v)] && !untouched) continue;
        results.push_back(v);
        std::vector<size_t> todo{m};  // a stack: chains may be long
        while (!todo.empty()) {
          const size_t e = todo.back();
          todo.pop_back();
          if (need[e]) continue;
          need[e] = 1;
          for (ir::ValueId u : p_.equations[e].inputs)
            if (computes_value(g, u)) todo.push_back(static_cast<size_t>(def_[idx(u)]));
        }
      }
  }

  // A fused equation reads at least one operand: where what group g needs reads nothing from
  // outside (constants aside), it computes all it did when it was formed.
  // `all` is computed(groups_[g]).
  void keep_an_operand(size_t g, const std::vector<size_t>& all, std::vector<char>& need, bool has_results) const {
    bool reads = false;
    for (size_t e : all)
      for (ir::ValueId u : p_.equations[e].inputs) {
        const int d = def_[idx(u)];
        reads = reads || (need[e] && (d < 0 || (!computes_value(g, u) && !is_constant(u))));
      }
    if (!reads && has_results)
      for (size_t e : all) need[e] = 1;
  }

  // Whether group g computes u (u is defined by one of its equations).
  bool computes_value(size_t g, ir::ValueId u) const {
    const int d = def_[idx(u)];
    return d >= 0 && computes(g, static_cast<size_t>(d));
  }

  // The program with a fused equation per group, each where its last needed member was; a group
  // left with one equation is that equation again. Returns whether any fused equation was made.
  bool emit_fused(const Needed& needed) {
    const size_t n = p_.equations.size();
    std::vector<char> keep(n, 0);
    std::vector<std::vector<ir::Equation>> at(n);
    bool fused_any = false;
    for (size_t e = 0; e < n; ++e)
      if (group_of_eq_[e] < 0) keep[e] = 1;
    for (size_t g = 0; g < groups_.size(); ++g) {
      const std::vector<size_t>& eqs = needed.equations[g];
      if (eqs.empty()) continue;
      if (eqs.size() == 1) {
        keep[eqs[0]] = 1;
        continue;
      }
      ir::Equation fused;
      fused.prim = ir::op::fused;
      fused.params = ir::NoParams{};
      // Recomputation only (its own members and the producers it recomputes): the scheduler runs
      // it just before its reader, and cost_analysis counts its work as recomputed.
      fused.rematerialized =
          std::all_of(eqs.begin(), eqs.end(), [&](size_t m) { return p_.equations[m].rematerialized; });
      fused.subprograms.push_back(body_of(eqs, needed.results[g], &fused.inputs));
      fused.outputs = needed.results[g];
      size_t last = 0;
      for (size_t e : eqs)
        if (group_of_eq_[e] == static_cast<int>(g)) last = e;
        else if (stats_) ++stats_->recomputed;
      at[last].push_back(std::move(fused));
      fused_any = true;
    }
    if (!fused_any) return false;
    std::vector<ir::Equation> out;
    out.reserve(n);
    for (size_t e = 0; e < n; ++e) {
      if (keep[e]) out.push_back(std::move(p_.equations[e]));
      for (ir::Equation& f : at[e]) out.push_back(std::move(f));
    }
    p_.equations = std::move(out);
    return true;
  }

  // Constants and free broadcasts that only fused groups read are now dead (a broadcast first,
  // then what it read). Only those: a general DCE would also prune what a fused body computes
  // beyond its results, which keep_an_operand keeps on purpose.
  void drop_dead_copies() {
    std::vector<int> readers(p_.values.size(), 0);
    for (const ir::Equation& eq : p_.equations)
      for (ir::ValueId v : eq.inputs) ++readers[idx(v)];
    for (ir::ValueId v : p_.outputs) ++readers[idx(v)];
    std::vector<char> dead(p_.equations.size(), 0);
    for (size_t i = p_.equations.size(); i-- > 0;) {
      const ir::Equation& eq = p_.equations[i];
      const bool copyable =
          eq.prim == Primitive::constant || (eq.prim == Primitive::broadcast_in_dim && is_free(eq.outputs[0]));
      if (!copyable || readers[idx(eq.outputs[0])] != 0) continue;
      dead[i] = 1;
      for (ir::ValueId v : eq.inputs) --readers[idx(v)];
    }
    std::vector<ir::Equation> live;
    live.reserve(p_.equations.size());
    for (size_t i = 0; i < p_.equations.size(); ++i)
      if (!dead[i]) live.push_back(std::move(p_.equations[i]));
    p_.equations = std::move(live);
  }

  static size_t idx(ir::ValueId v) { return static_cast<size_t>(v); }

  ir::Program& p_;
  FuseStats* stats_;
  std::vector<int> def_;             // by value: the equation that defines it, -1 for inputs
  std::vector<int> group_of_value_;  // by value: the group whose member defines it (while grouping)
  std::vector<char> free_;           // by equation: a free broadcast (is_free)
  std::vector<Group> groups_;
  // Scratch by value for body_of and cone (all unset between calls).
  mutable std::vector<ir::ValueId> inner_scratch_;
  mutable std::vector<char> member_scratch_;
  // After grouping (index()):
  std::vector<int> group_of_eq_;                // by equation: the group it is a member of, or -1
  std::vector<std::vector<size_t>> copied_in_;  // by equation: the groups that recompute it
  std::vector<std::vector<size_t>> uses_;       // by value: the equations that read it
  std::vector<char> output_;                    // by value: the program returns it
  std::vector<int> last_read_;                  // by value: the latest place that reads it
};

}  // namespace

namespace {

bool fuse(ir::Program& program, FuseStats* stats) {
  bool changed = false;
  for (ir::Equation& eq : program.equations) {
    if (eq.prim == ir::op::fused) continue;  // already one loop
    for (auto& body : eq.subprograms) {
      auto copy = std::make_shared<ir::Program>(*body);
      if (fuse(*copy, stats)) {
        body = copy;
        changed = true;
      }
    }
  }
  return Fuser(program, stats).run() || changed;
}

}  // namespace

bool fuse_elementwise(ir::Program& program) { return fuse(program, nullptr); }
bool fuse_elementwise_counting(ir::Program& program, FuseStats& stats) { return fuse(program, &stats); }

}  // namespace ferry::compiler
