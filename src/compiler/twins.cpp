#include "compiler/twins.h"

#include <fmt/format.h>

#include <algorithm>
#include <concepts>
#include <string>
#include <unordered_map>

#include "ir/dce.h"
#include "compiler/pass_util.h"
#include "compiler/prune_scans.h"
#include "ferry/error.h"
#include "ir/params_text.h"
#include "ir/printer.h"

namespace ferry::compiler {
namespace {

using ir::ValueId;

constexpr size_t idx(std::integral auto i) { return static_cast<size_t>(i); }

// The text of bodies, printed once each: two bodies that print the same compute the same (a pass
// such as prune_scans gives the forward scan and its whole recomputation equal bodies of their own).
class BodyTexts {
 public:
  const std::string& of(const ir::Program* body) {
    auto [it, inserted] = text_.try_emplace(body);
    if (inserted) it->second = ir::print(*body);
    return it->second;
  }

 private:
  std::unordered_map<const ir::Program*, std::string> text_;
};

// What an equation computes: its primitive, parameters, name, bodies (by their text) and operands.
// A rank-0 value reshaped and the same value broadcast to that shape are one computation (simplify
// writes a splat as the broadcast, and may do so in one body and not in the other).
std::string key(const ir::Program& p, const ir::Equation& eq, const std::vector<ValueId>& inputs, BodyTexts& bodies) {
  std::string what = fmt::format("{}|{}", static_cast<int>(eq.prim), ir::params_to_string(eq.params));
  const bool scalar_in = eq.inputs.size() == 1 && p.type(eq.inputs[0]).rank() == 0;
  const bool splat = scalar_in && (eq.prim == Primitive::reshape || eq.prim == Primitive::broadcast_in_dim);
  if (splat) what = "splat|" + ir::to_string(p.type(eq.outputs.at(0)));
  std::string k = fmt::format("{}|{}|", what, eq.name);
  for (const auto& body : eq.subprograms) k += bodies.of(body.get()) + "|";
  for (ValueId v : inputs) k += fmt::format("{},", v);
  return k;
}

// Equations with bodies are matched only where they run no differentiated work of their own
// (a while_loop, a plain scan recomputed whole): a scan or checkpoint whose body recomputes
// (!remat inside) is a backward pass, which the scan pairs below handle.
bool body_matchable(const ir::Equation& eq);

// Matches the automatic equations of `bp` with equations of `fp`. `canon` maps bp's values to the
// fp values they equal (-1: none); at the top level (fp == bp) every value is itself. Returns that
// map as matching extends it (a recomputed value to the forward value it equals).
std::vector<ValueId> match(const ir::Program& fp, const ir::Program& bp, std::vector<ValueId> canon, int pair,
                           Twins& out) {
  const bool same = &fp == &bp;
  // checkpoint_name is an identity: a name and the value it names are the same value here (a
  // backward body names the stacked slice of a forward value that was named before it was stacked).
  std::vector<ValueId> unnamed(fp.values.size());
  for (size_t v = 0; v < unnamed.size(); ++v) unnamed[v] = static_cast<ValueId>(v);
  for (const ir::Equation& eq : fp.equations)
    if (eq.prim == Primitive::checkpoint_name && !eq.rematerialized) unnamed[idx(eq.outputs[0])] = unnamed[idx(eq.inputs[0])];
  auto keyed = [&](const std::vector<ValueId>& in) {
    std::vector<ValueId> k;
    for (ValueId v : in) k.push_back(unnamed[idx(v)]);
    return k;
  };
  BodyTexts bodies;
  std::unordered_map<std::string, size_t> table;
  for (size_t e = 0; e < fp.equations.size(); ++e) {
    const ir::Equation& eq = fp.equations[e];
    if (eq.rematerialized || !body_matchable(eq) || eq.outputs.empty()) continue;
    table.emplace(key(fp, eq, keyed(eq.inputs), bodies), e);
  }
  const size_t first = out.twins.size();
  // Every equation of bp that computes what an equation of fp computes maps to it (constants a pass
  // made again in the backward body, say); only automatic ones are twins, which may be replaced.
  for (size_t e = 0; e < bp.equations.size(); ++e) {
    const ir::Equation& eq = bp.equations[e];
    if (!body_matchable(eq) || eq.outputs.empty()) continue;
    std::vector<ValueId> in;
    bool known = true;
    for (ValueId v : eq.inputs) {
      known = known && canon[idx(v)] >= 0;
      in.push_back(canon[idx(v)]);
    }
    if (!known) continue;
    auto it = table.find(key(bp, eq, keyed(in), bodies));
    if (it == table.end() || (same && it->second >= e)) continue;
    const ir::Equation& f = fp.equations[it->second];
    if (f.outputs.size() != eq.outputs.size()) continue;
    for (size_t i = 0; i < eq.outputs.size(); ++i) {
      canon[idx(eq.outputs[i])] = f.outputs[i];
      if (eq.automatic) out.twins.push_back({pair, eq.outputs[i], f.outputs[i], e, it->second, false, -1, {}});
    }
  }
  // Candidates: read by something that is not a recomputation with a twin (backward work, or work
  // the backward pass does on forward values that the forward pass never did, such as 1 - tanh^2),
  // or returned.
  std::vector<char> twin_eq(bp.equations.size(), 0);
  for (size_t t = first; t < out.twins.size(); ++t) twin_eq[out.twins[t].clone_eq] = 1;
  std::vector<char> needed(bp.values.size(), 0);
  for (size_t e = 0; e < bp.equations.size(); ++e)
    if (!twin_eq[e])
      for (ValueId v : bp.equations[e].inputs) needed[idx(v)] = 1;
  for (ValueId v : bp.outputs) needed[idx(v)] = 1;
  for (size_t t = first; t < out.twins.size(); ++t) out.twins[t].candidate = needed[idx(out.twins[t].clone)] != 0;
  return canon;
}

bool body_matchable(const ir::Equation& eq) {
  if (eq.subprograms.empty()) return true;
  if (eq.prim != Primitive::while_loop && eq.prim != Primitive::scan) return false;
  for (const auto& body : eq.subprograms)
    if (!body || has_remat(*body) || has_automatic(*body)) return false;
  return true;
}

}  // namespace

bool has_remat(const ir::Program& p) {
  for (const ir::Equation& eq : p.equations)
    if (eq.rematerialized || (!eq.subprograms.empty() && has_remat(*eq.subprograms[0]))) return true;
  return false;
}

bool has_automatic(const ir::Program& p) {
  for (const ir::Equation& eq : p.equations) {
    if (eq.automatic) return true;
    for (const auto& body : eq.subprograms)
      if (body && has_automatic(*body)) return true;
  }
  return false;
}

Twin split_entry(ValueId v, size_t producer, std::vector<ValueId> late_readers) {
  Twin t;
  t.original = v;
  t.original_eq = producer;
  t.candidate = true;
  t.late_readers = std::move(late_readers);
  return t;
}

Twins find_twins(const ir::Program& p, bool fit_to_limit) {
  Twins out;
  std::vector<ValueId> identity(p.values.size());
  for (size_t v = 0; v < identity.size(); ++v) identity[v] = static_cast<ValueId>(v);
  out.top = match(p, p, identity, -1, out);
  const std::vector<ValueId>& top = out.top;

  std::vector<int> producer(p.values.size(), -1);
  for (size_t e = 0; e < p.equations.size(); ++e)
    for (ValueId v : p.equations[e].outputs) producer[idx(v)] = static_cast<int>(e);
  for (size_t b = 0; b < p.equations.size(); ++b) {
    const ir::Equation& sb = p.equations[b];
    if (sb.prim != Primitive::scan) continue;
    const bool automatic = has_automatic(*sb.subprograms.at(0));
    const bool stacked_residuals = automatic || (fit_to_limit && !has_remat(*sb.subprograms[0]));
    if (!stacked_residuals) continue;
    const auto& pb = std::get<ir::ScanParams>(sb.params);
    const ir::Program& B = *sb.subprograms[0];
    const size_t ncb = idx(pb.num_carry), nxb = idx(pb.num_xs);
    // The forward scan: it stacked one of this scan's xs, and runs the other way. Operands are
    // taken as the forward values they equal: where differentiation recomputed the forward scan
    // whole for this one, its pair is the forward scan, which the recomputation is a twin of.
    int f = -1;
    for (size_t j = ncb; j < ncb + nxb && f < 0; ++j) {
      int q = producer[idx(top[idx(sb.inputs[j])])];
      if (q < 0 || p.equations[idx(q)].prim != Primitive::scan) continue;
      const auto& pf = std::get<ir::ScanParams>(p.equations[idx(q)].params);
      if (pf.length == pb.length && pf.reverse != pb.reverse) f = q;
    }
    // Or, where the forward scan stacked nothing this one reads, the scan before it that runs the
    // other way over the same xs: what its body computes from those xs and its constants alone,
    // this body may read stacked (step i of both reads xs[i]).
    for (size_t q = b; f < 0 && q-- > 0;) {
      const ir::Equation& sq = p.equations[q];
      if (sq.prim != Primitive::scan || sq.rematerialized || has_remat(*sq.subprograms.at(0))) continue;
      const auto& pq = std::get<ir::ScanParams>(sq.params);
      if (pq.length != pb.length || pq.reverse == pb.reverse) continue;
      for (size_t j = ncb; j < ncb + nxb && f < 0; ++j)
        for (size_t m = idx(pq.num_carry); m < idx(pq.num_carry + pq.num_xs) && f < 0; ++m)
          if (sq.inputs[m] == top[idx(sb.inputs[j])]) f = static_cast<int>(q);
    }
    if (f < 0) continue;
    const ir::Equation& sf = p.equations[idx(f)];
    const auto& pf = std::get<ir::ScanParams>(sf.params);
    const ir::Program& F = *sf.subprograms.at(0);
    const size_t ncf = idx(pf.num_carry), nxf = idx(pf.num_xs);
    std::vector<ValueId> canon(B.values.size(), -1);
    for (size_t j = ncb; j < sb.inputs.size(); ++j) {
      ValueId o = top[idx(sb.inputs[j])];
      ValueId mapped = -1;
      if (j < ncb + nxb) {
        for (size_t k = ncf; k < sf.outputs.size() && mapped < 0; ++k)
          if (sf.outputs[k] == o) mapped = F.outputs[k];
        for (size_t m = ncf; m < ncf + nxf && mapped < 0; ++m)
          if (sf.inputs[m] == o) mapped = F.inputs[m];
      } else {
        for (size_t c = ncf + nxf; c < sf.inputs.size() && mapped < 0; ++c)
          if (sf.inputs[c] == o) mapped = F.inputs[c];
      }
      canon[idx(B.inputs[j])] = mapped;
    }
    out.pairs.push_back({idx(f), b});
    const int pair = static_cast<int>(out.pairs.size() - 1);
    match(F, B, std::move(canon), pair, out);
    // Stacked residuals: device results of the forward scan that only this scan reads, as xs.
    std::vector<int> uses(p.values.size(), 0);
    for (const ir::Equation& eq : p.equations)
      for (ValueId v : eq.inputs) ++uses[idx(top[idx(v)])];
    for (ValueId v : p.outputs) uses[idx(top[idx(v)])] += 1000;  // returned: not a residual
    for (size_t k = ncf; k < sf.outputs.size(); ++k) {
      ValueId s = sf.outputs[k];
      if (p.type(s).kind != MemoryKind::device) continue;
      int as_xs = 0;
      for (size_t j = ncb; j < ncb + nxb; ++j) as_xs += top[idx(sb.inputs[j])] == s;
      if (as_xs == 0 || as_xs != uses[idx(s)]) continue;
      Twin t;
      t.pair = pair;
      t.original = F.outputs[k];
      t.candidate = true;
      t.stacked = static_cast<int>(k);
      out.twins.push_back(t);
    }
  }
  return out;
}

namespace {

// The forward value v equals (v itself where it is one).
ValueId forward_value(const Twins& twins, ValueId v) {
  return idx(v) < twins.top.size() ? twins.top[idx(v)] : v;
}

// Follows renames to the value that stands for v.
ValueId resolve(const std::vector<ValueId>& ren, ValueId v) {
  while (ren[idx(v)] >= 0 && ren[idx(v)] != v) v = ren[idx(v)];
  return v;
}

ir::Equation device_put(ValueId in, ValueId out, MemoryKind dst, bool fetch) {
  ir::Equation e = compiler::device_put(in, out, dst);
  e.rematerialized = fetch;  // a fetch belongs to the backward pass, just before its reader
  return e;
}

constexpr size_t kBeforeAll = static_cast<size_t>(-1);

// The index of the equation that defines v in p, or kBeforeAll for an input.
size_t producer_in(const ir::Program& p, ValueId v) {
  for (size_t e = 0; e < p.equations.size(); ++e)
    for (ValueId o : p.equations[e].outputs)
      if (o == v) return e;
  return kBeforeAll;
}

// The forward/backward rewrite inside one program (the top level), or across one scan pair.
struct RegionEdit {
  // In the forward program: after equation i, offload these values (value, host value).
  std::unordered_map<size_t, std::vector<std::pair<ValueId, ValueId>>> offload_after;
  // In the backward program: before equation i, fetch (host value -> device value).
  std::unordered_map<size_t, std::vector<std::pair<ValueId, ValueId>>> fetch_before;
  std::vector<ValueId> ren;  // backward program: clone -> what replaces it
  // In the backward program: in equation i only, read `to` for `from`.
  std::unordered_map<size_t, std::vector<std::pair<ValueId, ValueId>>> rename_in;
};

void rebuild(ir::Program& p, const RegionEdit* fwd, const RegionEdit* bwd) {
  std::vector<ir::Equation> eqs;
  eqs.reserve(p.equations.size());
  if (fwd) {  // offloads of inputs
    auto it = fwd->offload_after.find(kBeforeAll);
    if (it != fwd->offload_after.end())
      for (auto [dev, host] : it->second) eqs.push_back(device_put(dev, host, p.type(host).kind, false));
  }
  for (size_t e = 0; e < p.equations.size(); ++e) {
    if (bwd) {
      auto it = bwd->fetch_before.find(e);
      if (it != bwd->fetch_before.end())
        for (auto [host, dev] : it->second) eqs.push_back(device_put(host, dev, p.type(dev).kind, true));
    }

    ir::Equation eq = std::move(p.equations[e]);
    if (bwd) {
      for (ValueId& v : eq.inputs) v = resolve(bwd->ren, v);
      if (auto it = bwd->rename_in.find(e); it != bwd->rename_in.end())
        for (auto [from, to] : it->second)
          for (ValueId& v : eq.inputs) v = v == from ? to : v;
    }
    eqs.push_back(std::move(eq));
    if (fwd) {
      auto it = fwd->offload_after.find(e);
      if (it != fwd->offload_after.end())
        for (auto [dev, host] : it->second) eqs.push_back(device_put(dev, host, p.type(host).kind, false));
    }
  }
  if (bwd)  // fetches for an empty program
    for (const auto& [e, fetches] : bwd->fetch_before)
      if (e >= p.equations.size())
        for (auto [host, dev] : fetches) eqs.push_back(device_put(host, dev, p.type(dev).kind, true));
  p.equations = std::move(eqs);
  if (bwd)
    for (ValueId& v : p.outputs) v = resolve(bwd->ren, v);
}

// The type t in memory kind `kind`.
ir::Type in_kind(ir::Type t, MemoryKind kind) {
  t.kind = kind;
  return t;
}

// Makes apply_twin_choices' choices in p (the program's copy), in the steps it runs, each a member
// below. Values are added to p in the order of those steps.
class ChoiceRewriter {
 public:
  ChoiceRewriter(ir::Program& p, const Twins& twins, const std::vector<TwinChoice>& choices, MemoryKind host,
                 std::vector<ValueId>* stacked_of)
      : p_(p), twins_(twins), choices_(choices), host_(host), stacked_of_(stacked_of) {}

  // The top level's edit, applied last (apply_top_level): a saved clone's readers read its
  // original; an offloaded clone's read a copy fetched back from the host copy made right after
  // the original (one host copy per original); an offloaded split's late readers read a copy
  // fetched back before the first of them.
  void plan_top_level() {
    top_.ren.assign(p_.values.size(), -1);
    std::unordered_map<ValueId, size_t> position_of;  // an equation's first result -> its index
    for (size_t e = 0; e < p_.equations.size(); ++e)
      if (!p_.equations[e].outputs.empty()) position_of[p_.equations[e].outputs[0]] = e;
    for (size_t t = 0; t < twins_.twins.size(); ++t) {
      const Twin& tw = twins_.twins[t];
      if (tw.pair >= 0 || !tw.candidate || choices_[t] == TwinChoice::recompute) continue;
      if (tw.clone < 0) {  // a split: late readers read a fetched-back copy
        if (choices_[t] == TwinChoice::offload) offload_split(tw, position_of);
      } else if (choices_[t] == TwinChoice::save) {
        top_.ren[idx(tw.clone)] = tw.original;
      } else {
        offload_clone(tw);
      }
    }
    top_.ren.resize(p_.values.size(), -1);
  }

  // Scan pair pi: a saved or offloaded value becomes a new stacked result of the forward scan and a
  // new xs operand of the backward one (offloaded: stacked in host memory, fetched back before its
  // readers); an offloaded stacked residual's stack moves to host memory. Both bodies are rebuilt.
  void rewrite_scan_pair(size_t pi) {
    const ScanPair& sp = twins_.pairs[pi];
    PairEdit pe(p_.equations[sp.forward], p_.equations[sp.backward]);
    pe.be.ren.assign(pe.B->values.size(), -1);
    for (size_t t = 0; t < twins_.twins.size(); ++t) {
      const Twin& tw = twins_.twins[t];
      if (tw.pair != static_cast<int>(pi) || !tw.candidate || choices_[t] == TwinChoice::recompute) continue;
      const bool off = choices_[t] == TwinChoice::offload;
      if (tw.stacked >= 0) {
        if (stacked_of_) (*stacked_of_)[t] = pe.sf.outputs[idx(tw.stacked)];
        if (off) stack_on_host(pe, tw);
        continue;
      }
      const auto [slice, stacked] = stacked_slice(pe, tw, off);
      if (stacked_of_) (*stacked_of_)[t] = stacked;
      ValueId replacement = slice;
      if (off) {
        replacement = pe.B->add_value(pe.F->type(tw.original));
        pe.be.fetch_before[tw.clone_eq].emplace_back(slice, replacement);
      }
      pe.be.ren.resize(pe.B->values.size(), -1);
      pe.be.ren[idx(tw.clone)] = replacement;
    }
    pe.be.ren.resize(pe.B->values.size(), -1);
    rebuild(*pe.F, &pe.fe, nullptr);
    rebuild(*pe.B, nullptr, &pe.be);
    eliminate_dead_code(*pe.B);
    pe.sf.subprograms[0] = pe.F;
    pe.sb.subprograms[0] = pe.B;
  }

  // The top level's edit made; then dead code removed and unused scan operands and results pruned.
  void apply_top_level() {
    top_.ren.resize(p_.values.size(), -1);  // stacked values were added
    rebuild(p_, &top_, &top_);
    eliminate_dead_code(p_);
    prune_scans(p_);
  }

 private:
  // One scan pair's rewrite: the two scans, copies of their bodies, and the edits of the bodies.
  struct PairEdit {
    PairEdit(ir::Equation& forward, ir::Equation& backward)
        : sf(forward), sb(backward), F(std::make_shared<ir::Program>(*forward.subprograms[0])),
          B(std::make_shared<ir::Program>(*backward.subprograms[0])) {}
    ir::Equation& sf;  // the forward scan
    ir::Equation& sb;  // the backward scan
    std::shared_ptr<ir::Program> F, B;
    RegionEdit fe, be;
    // Per choice (saved, offloaded): forward body value -> (its slice, an input of B; the stack, a
    // top-level value).
    std::unordered_map<ValueId, std::pair<ValueId, ValueId>> slice_of[2];
  };

  // A split's late readers read a copy fetched back before the first of them, from a host copy
  // made after the original's equation.
  void offload_split(const Twin& tw, const std::unordered_map<ValueId, size_t>& position_of) {
    std::vector<size_t> late;
    for (ValueId r : tw.late_readers)
      if (auto it = position_of.find(r); it != position_of.end()) late.push_back(it->second);
    if (late.empty()) return;
    ValueId h = p_.add_value(in_kind(p_.type(tw.original), host_)), back = p_.add_value(p_.type(tw.original));
    top_.offload_after[tw.original_eq].emplace_back(tw.original, h);
    top_.fetch_before[*std::min_element(late.begin(), late.end())].emplace_back(h, back);
    for (size_t e : late) top_.rename_in[e].emplace_back(tw.original, back);
  }

  // The clone's readers read a copy fetched back just before the clone's equation, from the host
  // copy of the original (made after the original's equation, once per original).
  void offload_clone(const Twin& tw) {
    auto [it, fresh] = host_copy_.emplace(tw.original, -1);
    if (fresh) {
      it->second = p_.add_value(in_kind(p_.type(tw.original), host_));
      top_.offload_after[tw.original_eq].emplace_back(tw.original, it->second);
    }
    ValueId back = p_.add_value(p_.type(tw.original));
    top_.ren.resize(p_.values.size(), -1);
    top_.fetch_before[tw.clone_eq].emplace_back(it->second, back);
    top_.ren[idx(tw.clone)] = back;
  }

  // A stacked residual's stack moves to host memory: the forward body copies each step's slice
  // out, the backward body fetches it back before it reads it.
  void stack_on_host(PairEdit& pe, const Twin& tw) {
    ir::Program &F = *pe.F, &B = *pe.B;
    const size_t k = idx(tw.stacked);
    const ValueId s = pe.sf.outputs[k];
    ValueId h = F.add_value(in_kind(F.type(F.outputs[k]), host_));
    pe.fe.offload_after[producer_in(F, F.outputs[k])].emplace_back(F.outputs[k], h);
    F.outputs[k] = h;
    p_.values[idx(s)].kind = host_;
    for (size_t j = 0; j < pe.sb.inputs.size(); ++j) {
      // The operand may be a whole recomputation's result equal to s: it reads s, on the host.
      if (forward_value(twins_, pe.sb.inputs[j]) != s) continue;
      pe.sb.inputs[j] = s;
      ValueId in = B.inputs[j];
      ValueId dev = B.add_value(B.type(in));
      B.values[idx(in)].kind = host_;
      pe.be.fetch_before[0].emplace_back(in, dev);
      pe.be.ren.resize(B.values.size(), -1);
      pe.be.ren[idx(in)] = dev;
    }
  }

  // The forward scan stacks tw's original (offloaded: its host copy) as a new result, which the
  // backward scan reads as a new xs operand; once per original and choice. Returns (the backward
  // body's slice input, the stacked top-level value).
  std::pair<ValueId, ValueId> stacked_slice(PairEdit& pe, const Twin& tw, bool off) {
    auto [it, fresh] = pe.slice_of[off].emplace(tw.original, std::pair<ValueId, ValueId>{-1, -1});
    if (!fresh) return it->second;
    ir::Program &F = *pe.F, &B = *pe.B;
    auto& pb = std::get<ir::ScanParams>(pe.sb.params);
    ValueId stacked_in_body = tw.original;
    if (off) {
      stacked_in_body = F.add_value(in_kind(F.type(tw.original), host_));
      pe.fe.offload_after[tw.original_eq].emplace_back(tw.original, stacked_in_body);
    }
    ir::Type slice = F.type(stacked_in_body);
    ir::Type stacked = slice;
    stacked.shape.insert(stacked.shape.begin(), pb.length);
    F.outputs.push_back(stacked_in_body);
    ValueId s = p_.add_value(stacked);
    pe.sf.outputs.push_back(s);
    ValueId x = B.add_value(slice);
    const auto at = static_cast<std::ptrdiff_t>(pb.num_carry + pb.num_xs);
    B.inputs.insert(B.inputs.begin() + at, x);
    pe.sb.inputs.insert(pe.sb.inputs.begin() + at, s);
    pb.num_xs += 1;
    it->second = {x, s};
    return it->second;
  }

  ir::Program& p_;
  const Twins& twins_;
  const std::vector<TwinChoice>& choices_;
  const MemoryKind host_;
  std::vector<ValueId>* stacked_of_;
  RegionEdit top_;
  std::unordered_map<ValueId, ValueId> host_copy_;  // top level: forward value -> its host copy
};

}  // namespace

std::shared_ptr<ir::Program> apply_twin_choices(const ir::Program& program, const Twins& twins,
                                                const std::vector<TwinChoice>& choices, MemoryKind host,
                                                std::vector<ValueId>* stacked_of) {
  if (choices.size() != twins.twins.size()) throw Error(ErrorCode::internal, "apply_twin_choices: a choice per twin");
  if (stacked_of) stacked_of->assign(twins.twins.size(), -1);
  auto out = std::make_shared<ir::Program>(program);
  ChoiceRewriter rewrite(*out, twins, choices, host, stacked_of);
  rewrite.plan_top_level();
  for (size_t pi = 0; pi < twins.pairs.size(); ++pi) rewrite.rewrite_scan_pair(pi);
  rewrite.apply_top_level();
  return out;
}

}  // namespace ferry::compiler
