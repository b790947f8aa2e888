#include "prims/fused_body.h"

#include <algorithm>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "ir/printer.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

using detail::invalid;

bool reduction(Primitive p) {
  return p == Primitive::reduce_sum || p == Primitive::reduce_max || p == Primitive::reduce_min;
}

// The primitives whose bool results a fused kernel computes (XLA's PRED arithmetic: add and max are
// "or", mul and min are "and"; the op table's FusedBool), and whose i32 results it computes: exact
// integer arithmetic on the 32-bit patterns, as the unfused integer kernels define it (FusedI32).
bool bool_result_ok(Primitive p) { return ir::has(p, ir::kFusedBool); }
bool i32_result_ok(Primitive p) { return ir::has(p, ir::kFusedI32); }

bool word_dtype(DType t) { return t == DType::f32 || t == DType::i32; }

}  // namespace

bool fusible_primitive(Primitive p) { return ir::has(p, ir::kFusible); }

FusedClass fused_class(const FusedLayout& l, const Shape& s) {
  using C = FusedClass;
  if (s == l.domain) return C::full;
  if (num_elements(s) == 1) return C::scalar;  // also a domain's only row: one number either way
  if (l.reduced_axes > 0 && std::equal(s.begin(), s.end(), l.domain.begin(), l.domain.end() - l.reduced_axes))
    return C::row;
  if (num_elements(s) == l.rows * l.cols) return C::full;  // the domain's elements in another shape
  return C::source;
}

FusedLayout fused_layout_params(const ir::Program& body) {
  FusedLayout l;
  // The domain: the largest element count, in the shape of the values whose layout matters (a
  // reduction's operand, a broadcast's result from a row or a source), else of the first value of
  // that size. Other values of that count are full values too, in another shape: the same
  // elements in the same row-major order (a reshape between them moves nothing).
  int64_t biggest = -1;
  for (const ir::Type& t : body.values) {
    if (t.dtype != DType::f32 && t.dtype != DType::boolean && t.dtype != DType::i32)
      invalid(fmt::format("a fused body holds f32, i32 and bool values only, not {}", ir::to_string(t)));
    if (t.kind != MemoryKind::device) invalid(fmt::format("a fused body's values live on the device, not {}", ir::to_string(t)));
    if (t.num_elements() > biggest) {
      biggest = t.num_elements();
      l.domain = t.shape;
    }
  }
  for (const ir::Equation& eq : body.equations) {
    const ir::Type* laid = nullptr;
    if (reduction(eq.prim) && !eq.inputs.empty()) laid = &body.type(eq.inputs[0]);
    if (eq.prim == Primitive::broadcast_in_dim && !eq.inputs.empty() && body.type(eq.inputs[0]).num_elements() > 1)
      laid = &body.type(eq.outputs.at(0));
    if (laid && laid->num_elements() == biggest) {
      l.domain = laid->shape;
      break;
    }
  }
  const int64_t rank = static_cast<int64_t>(l.domain.size());
  for (const ir::Equation& eq : body.equations) {
    if (!reduction(eq.prim)) continue;
    const auto& axes = std::get<ir::ReduceParams>(eq.params).axes;
    const int64_t k = static_cast<int64_t>(axes.size());
    if (l.reduced_axes != 0 && l.reduced_axes != k) invalid("the reductions of a fused body reduce different axes");
    l.reduced_axes = std::min(k, rank);
  }
  l.rows = num_elements(Shape(l.domain.begin(), l.domain.end() - l.reduced_axes));
  l.cols = num_elements(Shape(l.domain.end() - l.reduced_axes, l.domain.end()));
  return l;
}

void check_fused_equation(const FusedLayout& l, const ir::Equation& eq,
                          const std::function<const ir::Type&(ir::ValueId)>& type_of) {
  using C = FusedClass;
  if (!fusible_primitive(eq.prim)) invalid(fmt::format("{} cannot be part of a fused body", name_of(eq.prim)));
  if (!eq.subprograms.empty()) invalid("a fused body's equations have no bodies");
  const int64_t rank = static_cast<int64_t>(l.domain.size());
  for (const std::vector<ir::ValueId>* vs : {&eq.inputs, &eq.outputs})
    for (ir::ValueId v : *vs) {
      const ir::Type& t = type_of(v);
      if (t.dtype != DType::f32 && t.dtype != DType::boolean && t.dtype != DType::i32)
        invalid(fmt::format("a fused body holds f32, i32 and bool values only, not {}", ir::to_string(t)));
      if (t.kind != MemoryKind::device)
        invalid(fmt::format("a fused body's values live on the device, not {}", ir::to_string(t)));
    }
  if (reduction(eq.prim)) {
    const auto& axes = std::get<ir::ReduceParams>(eq.params).axes;
    const ir::Type& x = type_of(eq.inputs.at(0));
    const int64_t k = static_cast<int64_t>(axes.size());
    std::vector<int64_t> sorted = axes;
    std::sort(sorted.begin(), sorted.end());
    bool trailing = x.shape == l.domain && k > 0 && k == l.reduced_axes;
    for (int64_t i = 0; i < k && trailing; ++i) trailing = sorted[static_cast<size_t>(i)] == rank - k + i;
    if (!trailing)
      invalid(fmt::format("a fused reduction reduces trailing axes of the domain {}, not axes {} of {}",
                          ir::to_string(ir::Type{DType::f32, l.domain}), detail::dims_string(axes), ir::to_string(x)));
  }
  const ir::Type& out = type_of(eq.outputs.at(0));
  const C want = fused_class(l, out.shape);
  if (want == C::source)
    invalid(fmt::format("{} makes {}, which is neither the domain, a row of it nor a scalar", name_of(eq.prim),
                        ir::to_string(out)));
  // threefry2x32 makes its two words in one step; everything else makes one value.
  const size_t num_out = eq.prim == Primitive::threefry2x32 ? 2 : 1;
  if (eq.outputs.size() != num_out) invalid(fmt::format("a fused {} makes {} values", name_of(eq.prim), num_out));
  for (ir::ValueId v : eq.outputs)
    if (type_of(v).shape != out.shape) invalid("the results of a fused equation differ in shape");
  if (out.dtype == DType::i32 && !i32_result_ok(eq.prim) && eq.prim != Primitive::constant &&
      eq.prim != Primitive::iota && eq.prim != Primitive::broadcast_in_dim && eq.prim != Primitive::reshape)
    invalid(fmt::format("{} on i32 values cannot be part of a fused body", name_of(eq.prim)));
  auto cls = [&](size_t i) { return fused_class(l, type_of(eq.inputs.at(i)).shape); };
  // A source is read only by broadcast_in_dim.
  if (eq.prim != Primitive::broadcast_in_dim)
    for (size_t i = 0; i < eq.inputs.size(); ++i)
      if (cls(i) == C::source)
        invalid(fmt::format("{} reads {}, which is neither the domain, a row of it nor a scalar", name_of(eq.prim),
                            ir::to_string(type_of(eq.inputs[i]))));
  switch (eq.prim) {
    case Primitive::constant:
      break;
    case Primitive::iota:  // computed from each element's position in its own shape
      if (want == C::row) invalid("a fused iota makes the domain's elements or a scalar");
      break;
    case Primitive::reshape:  // the same elements in the same order: a full value or a scalar
      if (cls(0) != want || want == C::row) invalid("a fused reshape keeps the domain's elements or a scalar");
      break;
    case Primitive::reduce_sum: case Primitive::reduce_max: case Primitive::reduce_min:
      if (type_of(eq.inputs[0]).dtype != DType::f32) invalid("a fused reduction reduces f32 values");
      if (cls(0) != C::full || (want != C::row && !(want == C::scalar && l.rows == 1)))
        invalid("a fused reduction takes a full value to a row");
      break;
    case Primitive::broadcast_in_dim: {
      const auto& dims = std::get<ir::BroadcastInDimParams>(eq.params).broadcast_dimensions;
      const C from = cls(0);
      const ir::Type& x = type_of(eq.inputs[0]);
      bool ok = false;
      if (from == C::scalar) ok = want == C::full || want == C::row;
      else if (from == C::source) ok = want == C::full && out.shape == l.domain;  // gathered by the domain's index
      else if (from == C::row && want == C::full) {
        ok = out.shape == l.domain && static_cast<int64_t>(dims.size()) == rank - l.reduced_axes;
        for (size_t i = 0; i < dims.size() && ok; ++i) ok = dims[i] == static_cast<int64_t>(i);
      } else if (from == want) {  // same shape: the identity only
        ok = x.shape == out.shape;
        for (size_t i = 0; i < dims.size() && ok; ++i) ok = dims[i] == static_cast<int64_t>(i);
      }
      if (!ok) invalid(fmt::format("a fused broadcast_in_dim cannot take {} to {}", ir::to_string(x), ir::to_string(out)));
      break;
    }
    default:  // elementwise: full or scalar operands to full, row or scalar operands to row, scalars to scalar
      for (size_t i = 0; i < eq.inputs.size(); ++i) {
        const C c = cls(i);
        if (c != C::scalar && c != want)
          invalid(fmt::format("{} mixes {} and {} in a fused body", name_of(eq.prim), ir::to_string(type_of(eq.inputs[i])),
                              ir::to_string(out)));
      }
      if (out.dtype == DType::boolean && !bool_result_ok(eq.prim))
        invalid(fmt::format("{} on bool values cannot be part of a fused body", name_of(eq.prim)));
      if (eq.prim == Primitive::bitcast_convert_type && !(word_dtype(out.dtype) && word_dtype(type_of(eq.inputs[0]).dtype)))
        invalid("a fused bitcast_convert_type reinterprets between f32 and i32");
      // Integer operands only where the arithmetic is integer too (comparisons, converts and
      // bitcasts read them into other dtypes).
      const bool any_i32 = std::any_of(eq.inputs.begin(), eq.inputs.end(),
                                       [&](ir::ValueId v) { return type_of(v).dtype == DType::i32; });
      if (out.dtype != DType::i32 && any_i32) {
        const bool reads_i32 = eq.prim == Primitive::convert_element_type || eq.prim == Primitive::bitcast_convert_type ||
                               eq.prim == Primitive::eq || eq.prim == Primitive::ne || eq.prim == Primitive::lt ||
                               eq.prim == Primitive::le || eq.prim == Primitive::gt || eq.prim == Primitive::ge;
        if (!reads_i32) invalid(fmt::format("{} of i32 values cannot be part of a fused body", name_of(eq.prim)));
      }
  }
}

FusedLayout fused_layout(const ir::Program& body) {
  FusedLayout l = fused_layout_params(body);
  auto type_of = [&](ir::ValueId v) -> const ir::Type& { return body.type(v); };
  for (const ir::Equation& eq : body.equations) check_fused_equation(l, eq, type_of);
  const size_t nv = body.values.size();
  l.value_class.resize(nv);
  for (size_t v = 0; v < nv; ++v) l.value_class[v] = fused_class(l, body.values[v].shape);
  std::vector<char> is_input(nv, 0);
  for (ir::ValueId v : body.inputs) is_input[static_cast<size_t>(v)] = 1;
  for (ir::ValueId v : body.outputs)
    if (is_input.at(static_cast<size_t>(v)) || l.value_class[static_cast<size_t>(v)] == FusedClass::source)
      invalid("a fused body returns values it computes");
  return l;
}

std::vector<size_t> fused_in_place_inputs(const ir::Program& body) {
  const FusedLayout l = fused_layout(body);
  std::vector<size_t> inputs;
  for (size_t i = 0; i < body.inputs.size(); ++i) {
    const FusedClass c = l.value_class[static_cast<size_t>(body.inputs[i])];
    if (c != FusedClass::source) inputs.push_back(i);
  }
  return inputs;
}

}  // namespace ferry::prims
