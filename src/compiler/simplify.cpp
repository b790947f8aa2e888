#include "compiler/simplify.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ir/dce.h"
#include "compiler/pass_util.h"
#include "ferry/error.h"

namespace ferry::compiler {
namespace {

using ir::ValueId;

// Elementwise maps of one operand (the op table's Unary, and convert_element_type): a splat in is a
// splat out, computed once.
bool is_unary_elementwise(Primitive p) { return ir::has(p, ir::kUnary) || p == Primitive::convert_element_type; }

// The elementwise primitives whose shape rule takes a rank-0 operand beside larger ones.
bool takes_scalar_operands(Primitive p) { return ir::has(p, ir::kScalarOperands); }

bool is_identity_permutation(const ir::Dims& dims) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// A shape op whose output is its operand: same type, and nothing moves.
bool is_identity_shape_op(const ir::Equation& eq, const ir::Type& in, const ir::Type& out) {
  if (in != out) return false;
  switch (eq.prim) {
    case Primitive::reshape: return true;
    case Primitive::transpose: return is_identity_permutation(std::get<ir::TransposeParams>(eq.params).permutation);
    case Primitive::broadcast_in_dim:
      return is_identity_permutation(std::get<ir::BroadcastInDimParams>(eq.params).broadcast_dimensions);
    case Primitive::convert_element_type: return true;
    default: return false;
  }
}

class Simplifier {
 public:
  explicit Simplifier(ir::Program& p) : p_(p) {
    grow();
    for (ValueId v : p_.inputs) defined_[idx(v)] = 1;
  }

  bool run() {
    std::vector<ir::Equation> eqs = std::move(p_.equations);
    p_.equations.clear();
    for (ir::Equation& eq : eqs) {
      for (ValueId& v : eq.inputs) v = resolve(v);
      visit(std::move(eq));
    }
    for (ValueId& v : p_.outputs) {
      v = resolve(v);
      materialize(v);
    }
    return changed_;
  }

 private:
  // Where a splat that was not materialized came from, to mark its materialization the same way
  // (a recomputation left to the automatic planner stays one).
  struct Origin {
    std::string name;
    bool rematerialized = false, automatic = false;
  };

  static size_t idx(ValueId v) { return static_cast<size_t>(v); }

  // Per-value tables follow the program's values as the pass adds some.
  void grow() {
    size_t n = p_.values.size();
    rename_.resize(n, -1);
    splat_.resize(n, -1);
    defined_.resize(n, 0);
    constant_.resize(n);
    origin_.resize(n);
  }

  ValueId new_value(ir::Type t) {
    ValueId v = p_.add_value(std::move(t));
    grow();
    return v;
  }

  ValueId resolve(ValueId v) const {
    while (rename_[idx(v)] >= 0) v = rename_[idx(v)];
    return v;
  }

  void rename(ValueId from, ValueId to) {
    rename_[idx(from)] = to;
    changed_ = true;
  }

  // The rank-0 value every element of v equals, or -1 when v is not known to be a splat.
  ValueId scalar_of(ValueId v) const {
    if (splat_[idx(v)] >= 0) return splat_[idx(v)];
    return p_.type(v).rank() == 0 ? v : -1;
  }

  std::optional<double> constant_of(ValueId v) const {
    ValueId s = scalar_of(v);
    return s >= 0 ? constant_[idx(s)] : std::nullopt;
  }

  // Appends eq, first materializing the splats it reads in full.
  void emit(ir::Equation eq) {
    for (ValueId v : eq.inputs) materialize(v);
    for (ValueId v : eq.outputs) defined_[idx(v)] = 1;
    p_.equations.push_back(std::move(eq));
  }

  // Makes sure v has a defining equation before the next one emitted.
  void materialize(ValueId v) {
    if (defined_[idx(v)]) return;
    ValueId s = splat_[idx(v)];
    if (s < 0) throw Error(ErrorCode::internal, fmt::format("simplify: value %{} is used before it is defined", v));
    const ir::Type& t = p_.type(v);
    ir::Equation eq;
    std::optional<double> c = constant_[idx(s)];
    if (c && t.kind == MemoryKind::device) {
      eq.prim = Primitive::constant;
      eq.params = ir::ConstantParams{*c, t.dtype, t.shape};
    } else {
      eq.prim = Primitive::broadcast_in_dim;
      eq.params = ir::BroadcastInDimParams{t.shape, {}};
      eq.inputs = {s};
    }
    eq.outputs = {v};
    eq.name = origin_[idx(v)].name;
    eq.rematerialized = origin_[idx(v)].rematerialized;
    eq.automatic = origin_[idx(v)].automatic;
    defined_[idx(v)] = 1;
    p_.equations.push_back(std::move(eq));
  }

  // v, defined by `eq`, is a splat of the scalar s: it is materialized only if a reader needs it.
  void defer(ValueId v, ValueId s, const ir::Equation& eq) {
    splat_[idx(v)] = s;
    origin_[idx(v)] = {eq.name, eq.rematerialized, eq.automatic};
  }

  // A rank-0 constant of this value, one per (value, dtype).
  ValueId scalar_constant(double value, DType dtype) {
    auto key = std::pair{std::bit_cast<uint64_t>(value), dtype};
    if (auto it = scalars_.find(key); it != scalars_.end()) return it->second;
    ir::Equation eq;
    eq.prim = Primitive::constant;
    eq.params = ir::ConstantParams{value, dtype, {}};
    eq.outputs = {new_value(ir::Type{dtype, {}, MemoryKind::device})};
    constant_[idx(eq.outputs[0])] = value;
    scalars_.emplace(key, eq.outputs[0]);
    emit(std::move(eq));
    return scalars_.at(key);
  }

  void visit(ir::Equation eq) {
    switch (eq.prim) {
      case Primitive::constant: return visit_constant(std::move(eq));
      case Primitive::broadcast_in_dim: case Primitive::reshape: case Primitive::transpose:
        return visit_shape_op(std::move(eq));
      default:
        break;
    }
    if (eq.prim == Primitive::convert_element_type && p_.type(eq.inputs[0]) == p_.type(eq.outputs[0])) {
      rename(eq.outputs[0], eq.inputs[0]);
      return;
    }
    if (is_unary_elementwise(eq.prim) || takes_scalar_operands(eq.prim)) return visit_elementwise(std::move(eq));
    emit(std::move(eq));
  }

  void visit_constant(ir::Equation eq) {
    const auto& c = std::get<ir::ConstantParams>(eq.params);
    ValueId out = eq.outputs[0];
    if (c.shape.empty()) {
      constant_[idx(out)] = c.value;
      scalars_.emplace(std::pair{std::bit_cast<uint64_t>(c.value), c.dtype}, out);
      emit(std::move(eq));
      return;
    }
    defer(out, scalar_constant(c.value, c.dtype), eq);
  }

  void visit_shape_op(ir::Equation eq) {
    ValueId in = eq.inputs[0], out = eq.outputs[0];
    if (is_identity_shape_op(eq, p_.type(in), p_.type(out))) return rename(out, in);
    if (ValueId s = scalar_of(in); s >= 0) return defer(out, s, eq);
    emit(std::move(eq));
  }

  void visit_elementwise(ir::Equation eq) {
    ValueId out = eq.outputs[0];
    const ir::Type t = p_.type(out);
    std::vector<ValueId> scalars;
    bool all_splats = true;
    for (ValueId v : eq.inputs) {
      scalars.push_back(scalar_of(v));
      all_splats = all_splats && scalars.back() >= 0;
    }
    if (all_splats && t.rank() > 0) {
      // Every element is the same: compute it once, as a rank-0 value.
      ir::Equation one = eq;
      one.inputs = scalars;
      one.outputs = {new_value(ir::Type{t.dtype, {}, t.kind})};
      ValueId s = fold(one);
      if (s < 0) {
        s = one.outputs[0];
        emit(std::move(one));
      }
      defer(out, s, eq);
      changed_ = true;
      return;
    }
    if (takes_scalar_operands(eq.prim)) {
      for (size_t i = 0; i < eq.inputs.size(); ++i) {
        if (scalars[i] < 0 || p_.type(eq.inputs[i]).rank() == 0) continue;
        eq.inputs[i] = scalars[i];  // read with stride 0 instead of materialized
        changed_ = true;
      }
    }
    if (ValueId x = fold(eq); x >= 0) return rename(out, x);
    emit(std::move(eq));
  }

  // The operand `eq` (already reading scalars where it can) equals, bit for bit, or -1.
  ValueId fold(const ir::Equation& eq) const {
    const ir::Type& t = p_.type(eq.outputs[0]);
    auto same = [&](ValueId x) { return p_.type(x) == t ? x : -1; };
    auto is = [&](ValueId v, auto pred) {
      std::optional<double> c = constant_of(v);
      return c.has_value() && pred(*c);
    };
    const bool integer = t.dtype == DType::i32;
    auto one = [](double c) { return c == 1.0; };
    // The zero that leaves every x unchanged when added: -0 (x + +0 turns -0 into +0); any 0 for i32.
    auto additive_identity = [&](double c) { return c == 0.0 && (integer || std::signbit(c)); };
    auto subtractive_identity = [&](double c) { return c == 0.0 && (integer || !std::signbit(c)); };
    auto lowest = [&](double c) {
      return integer ? c == std::numeric_limits<int32_t>::min() : c == -std::numeric_limits<double>::infinity();
    };
    auto highest = [&](double c) {
      return integer ? c == std::numeric_limits<int32_t>::max() : c == std::numeric_limits<double>::infinity();
    };
    if (t.dtype == DType::boolean && eq.prim != Primitive::select) return -1;
    switch (eq.prim) {
      case Primitive::mul: case Primitive::add: case Primitive::max: case Primitive::min: {
        ValueId a = eq.inputs[0], b = eq.inputs[1];
        auto identity = [&](ValueId v) {
          switch (eq.prim) {
            case Primitive::mul: return is(v, one);
            case Primitive::add: return is(v, additive_identity);
            case Primitive::max: return is(v, lowest);
            default: return is(v, highest);
          }
        };
        if (identity(b) && same(a) >= 0) return a;
        if (identity(a) && same(b) >= 0) return b;
        return -1;
      }
      case Primitive::div:
        return is(eq.inputs[1], one) ? same(eq.inputs[0]) : -1;
      case Primitive::sub:
        return is(eq.inputs[1], subtractive_identity) ? same(eq.inputs[0]) : -1;
      case Primitive::select: {
        ValueId on_true = eq.inputs[1], on_false = eq.inputs[2];
        if (on_true == on_false) return same(on_true);
        if (std::optional<double> c = constant_of(eq.inputs[0])) return same(*c != 0 ? on_true : on_false);
        return -1;
      }
      default:
        return -1;
    }
  }

  ir::Program& p_;
  std::vector<ValueId> rename_;             // a folded value -> the value it equals
  std::vector<ValueId> splat_;              // a splat -> its rank-0 scalar (-1: not a splat)
  std::vector<char> defined_;               // has a defining equation among those emitted
  std::vector<std::optional<double>> constant_;  // rank-0 constants: their value
  std::vector<Origin> origin_;              // deferred splats: the equation that defined them
  std::map<std::pair<uint64_t, DType>, ValueId> scalars_;  // rank-0 constants by (value bits, dtype)
  bool changed_ = false;
};

}  // namespace

bool simplify(ir::Program& program) {
  bool changed = run_on_bodies(program, simplify);
  // Deferring a splat and materializing it before its first reader only moves it; when nothing
  // folded, the program is left exactly as it was.
  ir::Program original = program;
  if (!Simplifier(program).run()) {
    program = std::move(original);
    return changed;
  }
  eliminate_dead_code(program);  // the constants and broadcasts no reader needs any more
  return true;
}

}  // namespace ferry::compiler
