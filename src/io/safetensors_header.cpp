#include "io/safetensors_header.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ferry/error.h"
#include "ir/echo.h"
#include "ir/limits.h"
#include "ir/type.h"

namespace ferry::io {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& what) {
  throw Error(ErrorCode::invalid_argument, "safetensors: " + what);
}

struct DTypeName {
  std::string_view name;
  DType dtype;
};
constexpr DTypeName kSupported[] = {{"F32", DType::f32},  {"F64", DType::f64}, {"F16", DType::f16},
                                    {"BF16", DType::bf16}, {"I32", DType::i32}, {"BOOL", DType::boolean}};
// The format's other dtypes: valid in a file, but ferry has no arrays of them.
constexpr std::string_view kUnsupported[] = {"I8",      "U8",      "I16",      "U16",  "U32",      "I64",
                                             "U64",     "F8_E5M2", "F8_E4M3",  "F8_E8M0", "F4", "F6_E2M3",
                                             "F6_E3M2", "C64",     "F8_E4M3FN", "F8_E5M2FNUZ"};

DType parse_dtype(const std::string& name, const std::string& tensor) {
  for (const DTypeName& d : kSupported)
    if (d.name == name) return d.dtype;
  for (std::string_view u : kUnsupported)
    if (u == name)
      throw Error(ErrorCode::unimplemented,
                  fmt::format("safetensors: tensor '{}' has dtype {}, which ferry does not have (it reads BOOL, BF16, "
                              "F16, F32, F64 and I32)",
                              ir::echo(tensor), ir::echo(name)));
  bad(fmt::format("tensor '{}' has an unknown dtype '{}'", ir::echo(tensor), ir::echo(name)));
}

uint64_t unsigned_of(const json& v, const std::string& what) {
  if (!v.is_number_unsigned()) bad(fmt::format("{} must be a non-negative integer, got {}", what, ir::echo(v.dump())));
  return v.get<uint64_t>();
}

TensorEntry parse_entry(const std::string& name, const json& info) {
  if (!info.is_object()) bad(fmt::format("tensor '{}' must be an object with dtype, shape and data_offsets", ir::echo(name)));
  TensorEntry e;
  e.name = name;
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!info.contains(field)) bad(fmt::format("tensor '{}' has no \"{}\"", ir::echo(name), field));
  const json& dtype = info["dtype"];
  if (!dtype.is_string()) bad(fmt::format("tensor '{}': dtype must be a string, got {}", ir::echo(name), ir::echo(dtype.dump())));
  e.dtype = parse_dtype(dtype.get<std::string>(), name);
  const json& shape = info["shape"];
  if (!shape.is_array()) bad(fmt::format("tensor '{}': shape must be an array, got {}", ir::echo(name), ir::echo(shape.dump())));
  if (shape.size() > static_cast<size_t>(ir::kMaxRank))
    bad(fmt::format("tensor '{}' has {} dimensions; ferry arrays have at most {}", ir::echo(name), shape.size(), ir::kMaxRank));
  for (const json& d : shape) {
    uint64_t n = unsigned_of(d, fmt::format("tensor '{}': a dimension", ir::echo(name)));
    e.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(n, INT64_MAX)));  // INT64_MAX is too large anyway
  }
  // The rule Array and the tracer apply (ir/limits.h), before anything is allocated: a shape such as
  // [2^62, 0] holds no bytes but is no array ferry can make.
  if (std::string problem = ir::size_problem(e.dtype, e.shape); !problem.empty())
    bad(fmt::format("tensor '{}': shape {} {}", ir::echo(name), ir::echo(shape.dump()), problem));
  const json& offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    bad(fmt::format("tensor '{}': data_offsets must be [begin, end], got {}", ir::echo(name), ir::echo(offsets.dump())));
  e.begin = unsigned_of(offsets[0], fmt::format("tensor '{}': data_offsets[0]", ir::echo(name)));
  e.end = unsigned_of(offsets[1], fmt::format("tensor '{}': data_offsets[1]", ir::echo(name)));
  if (e.end < e.begin) bad(fmt::format("tensor '{}': data_offsets [{}, {}] end before they begin", ir::echo(name), e.begin, e.end));
  const auto bytes = static_cast<uint64_t>(num_elements(e.shape)) * dtype_size(e.dtype);  // at most 2^62
  if (bytes != e.end - e.begin)
    bad(fmt::format("tensor '{}': {}{} needs {} bytes but data_offsets [{}, {}] hold {}", ir::echo(name), dtype_name(e.dtype),
                    shape_string(e.shape), bytes, e.begin, e.end, e.end - e.begin));
  return e;
}

Metadata parse_metadata(const json& m) {
  if (!m.is_object()) bad("__metadata__ must be an object of strings, got " + ir::echo(m.dump()));
  Metadata out;
  for (const auto& [k, v] : m.items()) {
    if (!v.is_string()) bad(fmt::format("__metadata__ value '{}' must be a string, got {}", ir::echo(k), ir::echo(v.dump())));
    out[k] = v.get<std::string>();
  }
  return out;
}

// Parses JSON no deeper than a header can be (top object > tensor object > shape array > number),
// refusing duplicate keys, which would otherwise silently drop a tensor.
json parse_json(std::string_view text) {
  std::vector<std::set<std::string>> keys;
  auto check = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= 3) bad("the header nests deeper than tensor entries do");
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
          bad(fmt::format("the key \"{}\" appears twice in one object", ir::echo(parsed.get<std::string>())));
        break;
      default: break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    bad(fmt::format("the header is not valid JSON: {}", e.what()));
  }
}

}  // namespace

uint64_t header_length(std::string_view first_bytes, uint64_t file_bytes) {
  if (first_bytes.size() < 8 || file_bytes < 8)
    bad(fmt::format("the file has {} bytes, fewer than the 8 that give the header's length", file_bytes));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(first_bytes[static_cast<size_t>(i)]);
  if (n > kMaxHeaderBytes) bad(fmt::format("the header claims {} bytes, over the limit of {}", n, kMaxHeaderBytes));
  if (n > file_bytes - 8)
    bad(fmt::format("the file is truncated: the header claims {} bytes but only {} follow the length", n, file_bytes - 8));
  return n;
}

Header parse_header(std::string_view text, uint64_t data_bytes) {
  // The format requires the header to open with '{' (trailing spaces pad it for alignment).
  if (text.empty() || text.front() != '{') bad("the header does not start with '{'");
  json j = parse_json(text);
  if (!j.is_object()) bad("the header must be a JSON object");
  Header h;
  for (const auto& [name, info] : j.items()) {
    if (name == "__metadata__") h.metadata = parse_metadata(info);
    else h.tensors.push_back(parse_entry(name, info));
  }
  // The byte ranges, in file order, must tile the data exactly.
  std::vector<const TensorEntry*> order;
  for (const TensorEntry& e : h.tensors) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t at = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry* e : order) {
    if (e->begin < at)
      bad(fmt::format("tensors '{}' and '{}' overlap (bytes [{}, {}) and [{}, {}))", ir::echo(previous->name), ir::echo(e->name),
                      previous->begin, previous->end, e->begin, e->end));
    if (e->begin > at)
      bad(fmt::format("bytes [{}, {}) before tensor '{}' belong to no tensor", at, e->begin, ir::echo(e->name)));
    at = e->end;
    previous = e;
  }
  if (at > data_bytes)
    bad(fmt::format("the file is truncated: its tensors need {} bytes of data but {} follow the header", at, data_bytes));
  if (at < data_bytes)
    bad(fmt::format("the file is {} bytes longer than its tensors ({} bytes of data follow the header, the tensors "
                    "need {})",
                    data_bytes - at, data_bytes, at));
  return h;
}

std::string_view safetensors_dtype(DType dtype) {
  for (const DTypeName& d : kSupported)
    if (d.dtype == dtype) return d.name;
  throw Error(ErrorCode::internal, "safetensors: no name for a dtype");
}

}  // namespace ferry::io
