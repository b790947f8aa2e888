// Helpers for the primitive registry tests: types from their printed form, and running a shape rule
// that must be rejected.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "ferry/error.h"
#include "prims/registry.h"

namespace ferry::prims::test_util {

// "f32[2,3]", "i32[]", "bool[4]{pinned_host}" -> ir::Type. Test-only: no error handling.
inline ir::Type ty(std::string_view s) {
  ir::Type t;
  size_t lb = s.find('['), rb = s.find(']');
  std::string_view dt = s.substr(0, lb);
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::boolean})
    if (dtype_name(d) == dt) t.dtype = d;
  std::string dims(s.substr(lb + 1, rb - lb - 1));
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    if (comma == std::string::npos) comma = dims.size();
    t.shape.push_back(std::stoll(dims.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  std::string_view rest = s.substr(rb + 1);
  if (rest == "{pinned_host}") t.kind = MemoryKind::pinned_host;
  if (rest == "{unpinned_host}") t.kind = MemoryKind::unpinned_host;
  return t;
}

inline std::vector<ir::Type> tys(std::initializer_list<std::string_view> ss) {
  std::vector<ir::Type> v;
  for (auto s : ss) v.push_back(ty(s));
  return v;
}

// The single output type, printed ("f32[2,3]{pinned_host}").
inline std::string out1(Primitive p, const ir::Params& params, std::initializer_list<std::string_view> in) {
  std::vector<ir::Type> outs = infer_types(p, params, tys(in));
  if (outs.size() != 1) return "<" + std::to_string(outs.size()) + " outputs>";
  return ir::to_string(outs[0]);
}

// The message of the INVALID_ARGUMENT error infer_types must throw; a test failure if it does not.
inline std::string rejected(Primitive p, const ir::Params& params, std::initializer_list<std::string_view> in) {
  try {
    std::vector<ir::Type> outs = infer_types(p, params, tys(in));
    ADD_FAILURE() << name_of(p) << " accepted operands it should reject; output " << ir::to_string(outs.at(0));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    return e.message();
  }
  return "<accepted>";
}

inline Cost cost_of(Primitive p, const ir::Params& params, std::initializer_list<std::string_view> in) {
  std::vector<ir::Type> ins = tys(in);
  std::vector<ir::Type> outs = infer_types(p, params, ins);
  return info(p).cost_rule(ins, outs, params);
}

}  // namespace ferry::prims::test_util
