#include "ir/params_text.h"

#include <type_traits>

#include <fmt/format.h>

namespace ferry::ir {
namespace {

// One function per params struct: it calls f(name, field) for each field, in print order. Field
// names are the struct's member names. Adding a struct to Params means adding its function here.
template <class F> void fields(NoParams&, F&&) {}
template <class F> void fields(ConvertParams& p, F&& f) { f("new_dtype", p.new_dtype); }
template <class F> void fields(IotaParams& p, F&& f) {
  f("dtype", p.dtype);
  f("shape", p.shape);
  f("dimension", p.dimension);
}
template <class F> void fields(ConstantParams& p, F&& f) {
  f("value", p.value);
  f("dtype", p.dtype);
  f("shape", p.shape);
}
template <class F> void fields(BroadcastInDimParams& p, F&& f) {
  f("shape", p.shape);
  f("broadcast_dimensions", p.broadcast_dimensions);
}
template <class F> void fields(ReshapeParams& p, F&& f) { f("new_sizes", p.new_sizes); }
template <class F> void fields(TransposeParams& p, F&& f) { f("permutation", p.permutation); }
template <class F> void fields(ReduceParams& p, F&& f) { f("axes", p.axes); }
template <class F> void fields(DotGeneralParams& p, F&& f) {
  f("lhs_contracting", p.dims.lhs_contracting);
  f("rhs_contracting", p.dims.rhs_contracting);
  f("lhs_batch", p.dims.lhs_batch);
  f("rhs_batch", p.dims.rhs_batch);
}
template <class F> void fields(SliceParams& p, F&& f) {
  f("start_indices", p.start_indices);
  f("limit_indices", p.limit_indices);
  f("strides", p.strides);
}
template <class F> void fields(DynamicSliceParams& p, F&& f) { f("slice_sizes", p.slice_sizes); }
template <class F> void fields(ConcatenateParams& p, F&& f) { f("dimension", p.dimension); }
template <class F> void fields(DevicePutParams& p, F&& f) { f("dst", p.dst); }
template <class F> void fields(CheckpointParams& p, F&& f) { f("prevent_cse", p.prevent_cse); }
template <class F> void fields(ArgReduceParams& p, F&& f) { f("axis", p.axis); }
template <class F> void fields(CumulativeParams& p, F&& f) {
  f("axis", p.axis);
  f("reverse", p.reverse);
}
template <class F> void fields(SortParams& p, F&& f) {
  f("axis", p.axis);
  f("descending", p.descending);
  f("total_order", p.total_order);
}
template <class F> void fields(GatherParams& p, F&& f) {
  f("offset_dims", p.offset_dims);
  f("collapsed_slice_dims", p.collapsed_slice_dims);
  f("start_index_map", p.start_index_map);
  f("slice_sizes", p.slice_sizes);
  f("mode", p.mode);
}
template <class F> void fields(ScatterParams& p, F&& f) {
  f("update_window_dims", p.update_window_dims);
  f("inserted_window_dims", p.inserted_window_dims);
  f("scatter_dims_to_operand_dims", p.scatter_dims_to_operand_dims);
  f("mode", p.mode);
}
template <class F> void fields(CollectiveParams& p, F&& f) { f("axis_size", p.axis_size); }
template <class F> void fields(CollectiveDimParams& p, F&& f) {
  f("axis_size", p.axis_size);
  f("dimension", p.dimension);
  f("tiled", p.tiled);
}
template <class F> void fields(ScanParams& p, F&& f) {
  f("length", p.length);
  f("reverse", p.reverse);
  f("num_carry", p.num_carry);
  f("num_xs", p.num_xs);
}

template <class> inline constexpr bool kUnsupportedField = false;

// The value types a field may have; a struct with a field of another type fails to compile here.
template <class T> std::string value_to_string(const T& v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return fmt::format("{}", v);
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    return fmt::format("[{}]", fmt::join(v, ","));
  } else if constexpr (std::is_same_v<T, double>) {
    return double_to_string(v);
  } else if constexpr (std::is_same_v<T, DType>) {
    return std::string(dtype_name(v));
  } else if constexpr (std::is_same_v<T, MemoryKind>) {
    return std::string(memory_kind_name(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else {
    static_assert(kUnsupportedField<T>, "params field of a type the text form cannot write");
  }
}

template <class T> void read_value(T& v, ParamValueReader& r) {
  if constexpr (std::is_same_v<T, int64_t>) {
    v = r.read_int();
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    v = r.read_int_list();
  } else if constexpr (std::is_same_v<T, double>) {
    v = r.read_double();
  } else if constexpr (std::is_same_v<T, DType>) {
    v = r.read_dtype();
  } else if constexpr (std::is_same_v<T, MemoryKind>) {
    v = r.read_memory_kind();
  } else if constexpr (std::is_same_v<T, bool>) {
    v = r.read_bool();
  } else {
    static_assert(kUnsupportedField<T>, "params field of a type the text form cannot read");
  }
}

}  // namespace

std::string double_to_string(double v) { return fmt::format("{}", v); }

std::vector<std::string_view> param_names(const Params& p) {
  std::vector<std::string_view> names;
  std::visit(
      [&](auto s) {  // a copy: `fields` hands out mutable references
        fields(s, [&](std::string_view name, auto&) { names.push_back(name); });
      },
      p);
  return names;
}

bool read_param(Params& p, std::string_view name, ParamValueReader& r) {
  bool found = false;
  std::visit(
      [&](auto& s) {
        fields(s, [&](std::string_view field, auto& value) {
          if (!found && field == name) {
            read_value(value, r);
            found = true;
          }
        });
      },
      p);
  return found;
}

std::string params_to_string(const Params& p) {
  std::vector<std::string> parts;
  std::visit(
      [&](auto s) {
        fields(s, [&](std::string_view name, auto& value) {
          parts.push_back(fmt::format("{}={}", name, value_to_string(value)));
        });
      },
      p);
  if (parts.empty()) return "";
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

}  // namespace ferry::ir
