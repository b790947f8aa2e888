// What the fuzz targets do with one input, shared with the regression test that replays
// fuzz/regressions/ in the normal test suite. Every function returns normally or throws
// ferry::Error; anything else (a crash, a sanitizer report, another exception) is a bug.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ferry/ferry.h"
#include "ir/program.h"
#include "driver/lowered.h"

namespace ferry::fuzz {

// Programs larger than this are not compiled (the fuzzer would spend its time allocating).
inline constexpr double kMaxProgramBytes = 4 << 20;
// Nor are programs whose scans would run more equations than this, nor any with a while loop.
inline constexpr double kMaxSteps = 1e5;
inline constexpr int64_t kDeviceLimit = 64 << 20;

// Bytes of every value, subprograms included, and equations run (scan bodies times their length).
// Doubles: the fuzzer writes shapes whose products overflow int64.
inline void measure(const ir::Program& p, double& bytes, double& steps) {
  for (const ir::Type& t : p.values) {
    double n = static_cast<double>(dtype_size(t.dtype));
    for (int64_t d : t.shape) n *= static_cast<double>(d);
    bytes += n;
  }
  for (const ir::Equation& e : p.equations) {
    steps += 1;
    // A while loop's trip count is unknown before it runs (an always-true predicate never ends).
    if (e.prim == Primitive::while_loop) steps += kMaxSteps;
    double length = 1;
    if (const auto* s = std::get_if<ir::ScanParams>(&e.params)) length = static_cast<double>(std::max<int64_t>(s->length, 1));
    for (const auto& sub : e.subprograms) {
      double sub_bytes = 0, sub_steps = 0;
      measure(*sub, sub_bytes, sub_steps);
      bytes += sub_bytes;
      steps += sub_steps * length;
    }
  }
}

// Small values of each input's type: 0.5 for floats, 1 for integers, true for bools.
inline std::vector<Array> small_inputs(const Compiled& c) {
  std::vector<Array> args;
  for (const ShapeDtype& s : c.input_specs()) {
    Array a = Array::allocate(s.dtype, s.shape, s.kind);
    auto* p = static_cast<unsigned char*>(a.mutable_data());
    for (int64_t i = 0; i < a.size(); ++i) {
      switch (s.dtype) {
        case DType::f32: reinterpret_cast<float*>(p)[i] = 0.5f; break;
        case DType::f64: reinterpret_cast<double*>(p)[i] = 0.5; break;
        case DType::f16: reinterpret_cast<float16*>(p)[i] = float16(0.5f); break;
        case DType::bf16: reinterpret_cast<bfloat16*>(p)[i] = bfloat16(0.5f); break;
        case DType::i32: reinterpret_cast<int32_t*>(p)[i] = 1; break;
        case DType::boolean: p[i] = 1; break;
      }
    }
    args.push_back(a);
  }
  return args;
}

// Parses text; the text of what parses must parse back to the same text.
inline Lowered parse_checked(const std::string& text) {
  Lowered l = parse_program(text);
  std::string printed = l.as_text();
  if (parse_program(printed).as_text() != printed)
    throw std::logic_error("printed program does not round-trip:\n" + printed);
  return l;
}

// Parses, then compiles under a device limit and runs on small inputs if the program is small.
inline void parse_compile_run(const std::string& text) {
  Lowered l = parse_checked(text);
  double bytes = 0, steps = 0;
  measure(*l.impl().program, bytes, steps);
  if (bytes > kMaxProgramBytes || steps > kMaxSteps) return;
  Compiled c = l.compile({.device_memory_limit = kDeviceLimit});
  std::vector<Array> out = c.run(small_inputs(c));
  ExecutionStats s = c.execution_stats();
  if (s.device_high_water_bytes != c.memory_analysis().peak_memory_in_bytes)
    throw std::logic_error("measured device high-water differs from the planned peak:\n" + c.memory_report());
}

}  // namespace ferry::fuzz
