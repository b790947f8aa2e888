// The JAX reference values for issue 16's operations (tests/trace/data/jax_nn_reference.json,
// written by bench/peers/nn_reference.py), and a helper that runs a traced function once.
#pragma once

#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ferry/ferry.h"

namespace ferry::testing {

inline const nlohmann::json& jax_nn_reference() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(FERRY_TEST_DATA) + "/trace/data/jax_nn_reference.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

template <class T> std::vector<T> ref_vector(const nlohmann::json& j) { return j.get<std::vector<T>>(); }

// Floats, with null for NaN (JSON has no NaN).
inline std::vector<float> ref_floats(const nlohmann::json& j) {
  std::vector<float> out;
  for (const auto& v : j) out.push_back(v.is_null() ? std::numeric_limits<float>::quiet_NaN() : v.get<float>());
  return out;
}

// uint32 words of JAX as the i32 values ferry holds.
inline std::vector<int32_t> ref_words(const nlohmann::json& j) {
  std::vector<int32_t> out;
  for (uint64_t v : j.get<std::vector<uint64_t>>()) out.push_back(static_cast<int32_t>(static_cast<uint32_t>(v)));
  return out;
}

// Compiles f for these arguments and runs it once.
template <class F, class... A> std::vector<Array> run_once(F f, const A&... args) {
  return jit(f).lower(args...).compile()(args...);
}

}  // namespace ferry::testing
