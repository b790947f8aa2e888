// Tensor and the operations on it, as the jaxpr converter (python/ferry/jax/_rules.py) calls them:
// one binding per ferry operation, with the jax.lax argument order that tensor.h follows.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace ferry::python {

DType parse_dtype(const std::string& name) {
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::boolean})
    if (dtype_name(d) == name) return d;
  throw Error(ErrorCode::invalid_argument, "unknown ferry dtype '" + name + "' (f32, f64, f16, bf16, i32, bool)");
}

MemoryKind parse_kind(const std::string& name) {
  for (MemoryKind k : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::unpinned_host})
    if (memory_kind_name(k) == name) return k;
  throw Error(ErrorCode::invalid_argument,
              "unknown memory kind '" + name + "' (device, pinned_host, unpinned_host)");
}

namespace {

GatherScatterMode parse_mode(const std::string& mode) {
  if (mode == "clip") return GatherScatterMode::clip;
  if (mode == "fill") return GatherScatterMode::fill_or_drop;
  if (mode == "fill_zero") return GatherScatterMode::fill_zero_or_drop;
  throw Error(ErrorCode::invalid_argument, "unknown gather/scatter mode '" + mode + "' (clip, fill, fill_zero)");
}

using T = const Tensor&;

}  // namespace

void init_ops(nb::module_& m) {
  nb::class_<Tensor>(m, "Tensor", "A value inside a function ferry is tracing")
      .def_prop_ro("dtype", [](T t) { return std::string(dtype_name(t.dtype())); })
      .def_prop_ro("shape", [](T t) {
        nb::list dims;
        for (int64_t d : t.shape()) dims.append(d);
        return nb::tuple(dims);
      })
      .def_prop_ro("memory_kind", [](T t) { return std::string(memory_kind_name(t.memory_kind())); })
      .def("__repr__", [](T t) { return "Tensor(" + t.type_string() + ")"; });

  // Elementwise, unary: one per Unary line of the op table, as in ferry/tensor.h.
#define FERRY_UNARY_FUNCTION(id) m.def(#id, [](T x) { return id(x); });
#include "ferry/unary_functions.inc"
#undef FERRY_UNARY_FUNCTION
  m.def("stop_gradient", [](T x) { return stop_gradient(x); });

  // Elementwise, binary (operands of one dtype; rank-0 operands broadcast).
  m.def("add", [](T a, T b) { return add(a, b); });
  m.def("sub", [](T a, T b) { return sub(a, b); });
  m.def("mul", [](T a, T b) { return mul(a, b); });
  m.def("div", [](T a, T b) { return div(a, b); });
  m.def("max", [](T a, T b) { return maximum(a, b); });
  m.def("min", [](T a, T b) { return minimum(a, b); });
  m.def("pow", [](T a, T b) { return pow(a, b); });
  m.def("rem", [](T a, T b) { return rem(a, b); });
  m.def("atan2", [](T a, T b) { return atan2(a, b); });
  m.def("logical_and", [](T a, T b) { return logical_and(a, b); });
  m.def("logical_or", [](T a, T b) { return logical_or(a, b); });
  m.def("logical_xor", [](T a, T b) { return logical_xor(a, b); });
  m.def("shift_left", [](T a, T b) { return shift_left(a, b); });
  m.def("shift_right_logical", [](T a, T b) { return shift_right_logical(a, b); });
  m.def("eq", [](T a, T b) { return eq(a, b); });
  m.def("ne", [](T a, T b) { return ne(a, b); });
  m.def("lt", [](T a, T b) { return lt(a, b); });
  m.def("le", [](T a, T b) { return le(a, b); });
  m.def("gt", [](T a, T b) { return gt(a, b); });
  m.def("ge", [](T a, T b) { return ge(a, b); });
  m.def("select_n", [](T which, const std::vector<Tensor>& cases) { return select_n(which, cases); });
  m.def("clamp", [](T lo, T x, T hi) { return clamp(lo, x, hi); });
  m.def("convert", [](T x, const std::string& dtype) { return convert(x, parse_dtype(dtype)); });
  m.def("bitcast_convert_type", [](T x, const std::string& dtype) { return bitcast_convert_type(x, parse_dtype(dtype)); });

  // Values without inputs.
  m.def("constant", [](double value, const Shape& shape, const std::string& dtype) {
    return constant(value, shape, parse_dtype(dtype));
  });
  m.def("iota", [](const std::string& dtype, const Shape& shape, int64_t dimension) {
    return iota(parse_dtype(dtype), shape, dimension);
  });

  // Linear algebra and reductions.
  m.def("dot_general", [](T lhs, T rhs, const Axes& lc, const Axes& rc, const Axes& lb, const Axes& rb) {
    return dot_general(lhs, rhs, DotDims{lc, rc, lb, rb});
  });
  m.def("reduce_sum", [](T x, const Axes& axes) { return sum(x, axes); });
  m.def("reduce_max", [](T x, const Axes& axes) { return reduce_max(x, axes); });
  m.def("reduce_min", [](T x, const Axes& axes) { return reduce_min(x, axes); });
  m.def("argmax", [](T x, int64_t axis) { return argmax(x, axis); });
  m.def("argmin", [](T x, int64_t axis) { return argmin(x, axis); });
  m.def("cumsum", [](T x, int64_t axis, bool reverse) { return cumsum(x, axis, reverse); });
  m.def("cummax", [](T x, int64_t axis, bool reverse) { return cummax(x, axis, reverse); });
  m.def("cummin", [](T x, int64_t axis, bool reverse) { return cummin(x, axis, reverse); });
  m.def("argsort", [](T x, int64_t axis, bool descending, bool total_order) {
    return argsort(x, axis, descending, total_order);
  });

  // Shape and indexing.
  m.def("reshape", [](T x, const Shape& shape) { return reshape(x, shape); });
  m.def("transpose", [](T x, const Axes& perm) { return transpose(x, perm); });
  m.def("broadcast_in_dim", [](T x, const Shape& shape, const Axes& dims) { return broadcast_in_dim(x, shape, dims); });
  m.def("slice", [](T x, const Axes& start, const Axes& limit, const Axes& strides) {
    return slice(x, start, limit, strides);
  });
  m.def("dynamic_slice", [](T x, const std::vector<Tensor>& starts, const Shape& sizes) {
    return dynamic_slice(x, starts, sizes);
  });
  m.def("dynamic_update_slice", [](T x, T update, const std::vector<Tensor>& starts) {
    return dynamic_update_slice(x, update, starts);
  });
  m.def("concatenate", [](const std::vector<Tensor>& xs, int64_t dim) { return concatenate(xs, dim); });
  m.def("gather", [](T operand, T indices, const Axes& offset_dims, const Axes& collapsed, const Axes& start_index_map,
                     const Shape& slice_sizes, const std::string& mode) {
    return gather(operand, indices, GatherDimensionNumbers{offset_dims, collapsed, start_index_map}, slice_sizes,
                  parse_mode(mode));
  });
  m.def("scatter", [](T operand, T indices, T updates, const Axes& update_window_dims, const Axes& inserted,
                      const Axes& to_operand, const std::string& mode) {
    return scatter(operand, indices, updates, ScatterDimensionNumbers{update_window_dims, inserted, to_operand},
                   parse_mode(mode));
  });
  m.def("take_along_axis", [](T x, T indices, int64_t axis, const std::string& mode) {
    return take_along_axis(x, indices, axis, parse_mode(mode));
  });
  m.def("scatter_add", [](T operand, T indices, T updates, const Axes& update_window_dims, const Axes& inserted,
                          const Axes& to_operand, const std::string& mode) {
    return scatter_add(operand, indices, updates, ScatterDimensionNumbers{update_window_dims, inserted, to_operand},
                       parse_mode(mode));
  });

  // Random bits, memory kinds, names.
  m.def("threefry2x32", [](T k0, T k1, T x0, T x1) { return random::threefry2x32(k0, k1, x0, x1); });
  m.def("device_put", [](T x, const std::string& kind) { return device_put(x, parse_kind(kind)); });
  m.def("checkpoint_name", [](T x, const std::string& name) { return checkpoint_name(x, name); });
}

}  // namespace ferry::python
