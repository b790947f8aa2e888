// Small random flat programs as IR text, for checking the schedule reference against brute force:
// f32 vectors of a few sizes, elementwise ops that the plan writes in place, reductions to scalars
// and broadcasts back (so sizes change along a path), and offloads and fetches (device_put, which
// lower_copies turns into copy pairs). Equations read recent values mostly and any value sometimes,
// so that programs have both chains and wide parts, and some values are never read.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ferry::compiler::testing {

inline std::string random_flat_ir(uint32_t seed, int equations) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  const int lengths[] = {16, 100, 256, 1024};  // 64, 448 (aligned from 400), 1024 and 4096 bytes
  struct V {
    int length;  // 0: a scalar
    bool host;
  };
  std::vector<V> vs;
  std::string text = "program @main(";
  for (int i = 0; i < 2; ++i) {
    vs.push_back({lengths[pick(4)], false});
    text += (i ? ", %" : "%") + std::to_string(i) + ": f32[" + std::to_string(vs.back().length) + "]";
  }
  text += ") {\n";
  auto type = [](const V& v) {
    return (v.length ? "f32[" + std::to_string(v.length) + "]" : std::string("f32[]")) + (v.host ? "{pinned_host}" : "");
  };
  // A recent value most of the time; one that satisfies `ok`, or -1.
  auto operand = [&](auto ok) {
    for (int tries = 0; tries < 20; ++tries) {
      int n = static_cast<int>(vs.size());
      int v = pick(3) == 0 ? pick(n) : std::max(0, n - 1 - pick(3));
      if (ok(vs[static_cast<size_t>(v)])) return v;
    }
    return -1;
  };
  auto device_vector = [](const V& v) { return !v.host && v.length > 0; };
  for (int made = 0; made < equations;) {
    int kind = pick(6);
    std::string eq;
    V out{};
    if (kind == 0 || kind == 1) {  // unary, in place
      int a = operand(device_vector);
      if (a < 0) continue;
      out = vs[static_cast<size_t>(a)];
      eq = (kind == 0 ? "exp %" : "sin %") + std::to_string(a);
    } else if (kind == 2) {  // binary, in place into either operand
      int a = operand(device_vector);
      if (a < 0) continue;
      int len = vs[static_cast<size_t>(a)].length;
      int b = operand([&](const V& v) { return device_vector(v) && v.length == len; });
      if (b < 0) continue;
      out = vs[static_cast<size_t>(a)];
      eq = (pick(2) ? "add %" : "mul %") + std::to_string(a) + ", %" + std::to_string(b);
    } else if (kind == 3) {  // reduce to a scalar
      int a = operand(device_vector);
      if (a < 0) continue;
      out = {0, false};
      eq = "reduce_sum[axes=[0]] %" + std::to_string(a);
    } else if (kind == 4) {  // broadcast a scalar to any size
      int a = operand([](const V& v) { return !v.host && v.length == 0; });
      if (a < 0) continue;
      out = {lengths[pick(4)], false};
      eq = "broadcast_in_dim[shape=[" + std::to_string(out.length) + "], broadcast_dimensions=[]] %" + std::to_string(a);
    } else {  // offload a device vector, or fetch a host one (two equations once lowered)
      if (made + 2 > equations) continue;
      int a = operand([](const V& v) { return v.length > 0; });
      if (a < 0) continue;
      out = vs[static_cast<size_t>(a)];
      out.host = !out.host;
      eq = std::string("device_put[dst=") + (out.host ? "pinned_host" : "device") + "] %" + std::to_string(a);
      ++made;
    }
    ++made;
    text += "  %" + std::to_string(vs.size()) + " = " + eq + " : " + type(out) + "\n";
    vs.push_back(out);
  }
  // The last value and sometimes another are returned.
  int last = static_cast<int>(vs.size()) - 1, other = 2 + pick(last - 1);
  text += "  return %" + std::to_string(last);
  if (other != last && pick(2)) text += ", %" + std::to_string(other);
  return text + "\n}\n";
}

}  // namespace ferry::compiler::testing
