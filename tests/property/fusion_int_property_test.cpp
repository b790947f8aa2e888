// Fusion on random programs of integer work, as random bits and masks make it: iota (i32 or f32, in the
// domain's shape, or over the flat element count and reshaped), i32 constants (scalar and
// full-shape), wrapping arithmetic, bitwise operations, shifts by any amount (XLA: 32 or more gives
// 0), threefry2x32's two words, comparisons to bool, selects, converts between i32, f32 and bool,
// bitcasts between i32 and f32, f32 arithmetic on the bitcast bits, and a trailing-axis reduction
// of f32 values. The fused program gives the unfused one's results bit for bit (f32 NaNs may
// differ in payload only), and its measured peak is its planned one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ferry/ferry.h"

namespace ferry {
namespace {

struct Value {
  int id;
  char dtype;  // 'i' (i32), 'f' (f32), 'b' (bool)
};

std::string dims_text(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

struct Generated {
  std::string text;
  std::vector<std::pair<DType, Shape>> inputs;
};

Generated generate(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  // Domains: small, multi-row blocks, rows longer than one block, and a flat one.
  static const std::vector<Shape> domains = {{7}, {3, 5}, {2, 3, 4}, {64, 33}, {5, 5000}, {4, 7, 129}, {20000}, {2, 4, 16, 16}};
  const Shape d = domains[static_cast<size_t>(pick(static_cast<int>(domains.size())))];
  const int rank = static_cast<int>(d.size());
  const int64_t n = num_elements(d);
  const std::string D = dims_text(d);
  auto type = [&](char t) { return fmt::format("{}{}", t == 'i' ? "i32" : t == 'f' ? "f32" : "bool", D); };

  Generated g;
  std::string header, body;
  int next = 0;
  std::vector<Value> vals;
  auto input = [&](DType dt, const Shape& s, const std::string& t, bool usable, char c) {
    header += fmt::format("{}%{}: {}", header.empty() ? "" : ", ", next, t);
    g.inputs.push_back({dt, s});
    if (usable) vals.push_back({next, c});
    return next++;
  };
  input(DType::i32, d, type('i'), true, 'i');
  input(DType::f32, d, type('f'), true, 'f');
  const int key0 = input(DType::i32, {}, "i32[]", false, 'i');
  const int key1 = input(DType::i32, {}, "i32[]", false, 'i');
  auto line = [&](const std::string& rhs, const std::string& t) {
    body += fmt::format("  %{} = {} : {}\n", next, rhs, t);
    return next++;
  };
  auto emit = [&](const std::string& rhs, char t) {
    const int id = line(rhs, type(t));
    vals.push_back({id, t});
    return id;
  };
  auto any = [&](char t) -> int {
    std::vector<int> c;
    for (const Value& v : vals)
      if (v.dtype == t) c.push_back(v.id);
    if (c.empty()) return t == 'i' ? 0 : t == 'f' ? 1 : -1;
    return c[static_cast<size_t>(pick(static_cast<int>(c.size())))];
  };
  // Constants that matter to bits: shift amounts at and past 32, the exponent of 1.0, extremes.
  static const double kInts[] = {0, 1, 9, 16, 31, 32, 33, -1, -7, 65535, 1065353216, 2147483647, -2147483648.0, 123456789};
  auto int_constant = [&]() {
    const double v = kInts[pick(14)];
    if (pick(2)) return line(fmt::format("constant[value={}, dtype=i32, shape=[]]", v), "i32[]");
    return line(fmt::format("constant[value={}, dtype=i32, shape={}]", v, D), type('i'));
  };
  static const char* kIntBinary[] = {"add", "sub", "mul", "max", "min", "and", "or", "xor",
                                     "shift_left", "shift_right_logical"};
  static const char* kIntUnary[] = {"neg", "abs", "sign", "not"};
  static const char* kCompare[] = {"lt", "le", "gt", "ge", "eq", "ne"};
  const int ops = 4 + pick(16);
  for (int i = 0; i < ops; ++i) {
    switch (pick(11)) {
      case 0:  // iota: along a dimension of the domain, or the flat counters reshaped
        if (pick(4) == 0) {
          emit(fmt::format("iota[dtype=f32, shape={}, dimension={}]", D, pick(rank)), 'f');
        } else if (pick(2)) {
          emit(fmt::format("iota[dtype=i32, shape={}, dimension={}]", D, pick(rank)), 'i');
        } else {
          const int flat = line(fmt::format("iota[dtype=i32, shape=[{}], dimension=0]", n), fmt::format("i32[{}]", n));
          emit(fmt::format("reshape[new_sizes={}] %{}", D, flat), 'i');
        }
        break;
      case 1: case 2: {
        const int a = any('i');
        const int b = pick(2) ? int_constant() : any('i');
        if (pick(2)) emit(fmt::format("{} %{}, %{}", kIntBinary[pick(10)], a, b), 'i');
        else emit(fmt::format("{} %{}, %{}", kIntBinary[pick(10)], b, a), 'i');
        break;
      }
      case 3:
        emit(fmt::format("{} %{}", kIntUnary[pick(4)], any('i')), 'i');
        break;
      case 4: {  // both words of the cipher, keys scalar or per element, the high counter word 0 or not
        const int k0 = pick(3) ? key0 : any('i'), k1 = pick(3) ? key1 : any('i');
        const int x0 = pick(2) ? line(fmt::format("constant[value=0, dtype=i32, shape={}]", D), type('i')) : any('i');
        const int x1 = any('i');
        body += fmt::format("  %{}, %{} = threefry2x32 %{}, %{}, %{}, %{} : {}, {}\n", next, next + 1, k0, k1, x0, x1,
                            type('i'), type('i'));
        vals.push_back({next, 'i'});
        vals.push_back({next + 1, 'i'});
        next += 2;
        break;
      }
      case 5: {  // a comparison, and what a mask feeds
        const int c = emit(fmt::format("{} %{}, %{}", kCompare[pick(6)], any('i'), pick(2) ? any('i') : int_constant()), 'b');
        switch (pick(3)) {
          case 0: emit(fmt::format("select %{}, %{}, %{}", c, any('i'), any('i')), 'i'); break;
          case 1: emit(fmt::format("select %{}, %{}, %{}", c, any('f'), any('f')), 'f'); break;
          default: emit(fmt::format("convert_element_type[new_dtype=i32] %{}", c), 'i');
        }
        break;
      }
      case 6:
        switch (pick(3)) {
          case 0: emit(fmt::format("convert_element_type[new_dtype=f32] %{}", any('i')), 'f'); break;
          case 1: emit(fmt::format("convert_element_type[new_dtype=i32] %{}", any('f')), 'i'); break;
          default: emit(fmt::format("convert_element_type[new_dtype=bool] %{}", any('i')), 'b');
        }
        break;
      case 7:
        if (pick(2)) emit(fmt::format("bitcast_convert_type[new_dtype=f32] %{}", any('i')), 'f');
        else emit(fmt::format("bitcast_convert_type[new_dtype=i32] %{}", any('f')), 'i');
        break;
      case 8: {  // f32 arithmetic, as uniform numbers are made from the bits (f - 1.0)
        const int c = line(fmt::format("constant[value={}, dtype=f32, shape=[]]", (pick(5) - 2) * 0.5), "f32[]");
        static const char* kF[] = {"sub", "mul", "add", "max"};
        emit(fmt::format("{} %{}, %{}", kF[pick(4)], any('f'), pick(2) ? c : any('f')), 'f');
        break;
      }
      case 9: {  // the i32 elements in the flat shape, worked on there, and back
        const std::string flat = fmt::format("i32[{}]", n);
        const int a = line(fmt::format("reshape[new_sizes=[{}]] %{}", n, any('i')), flat);
        const int b = line(fmt::format("{} %{}", kIntUnary[pick(4)], a), flat);
        emit(fmt::format("reshape[new_sizes={}] %{}", D, b), 'i');
        break;
      }
      default:
        if (any('b') >= 0) emit(fmt::format("select %{}, %{}, %{}", any('b'), any('i'), any('i')), 'i');
    }
  }
  std::vector<int> results{vals.back().id};
  // A reduction of the f32 work over trailing axes (a row loop), now and then.
  if (rank > 1 && pick(2)) {
    const int k = 1 + pick(rank - 1);
    std::vector<int64_t> axes;
    for (int64_t x = rank - k; x < rank; ++x) axes.push_back(x);
    const Shape rows(d.begin(), d.end() - k);
    const int f = any('f');
    const int r = line(fmt::format("reduce_max[axes={}] %{}", dims_text(axes), f), fmt::format("f32{}", dims_text(rows)));
    results.push_back(r);
  }
  for (int i = pick(3); i > 0; --i) results.push_back(vals[static_cast<size_t>(pick(static_cast<int>(vals.size())))].id);
  std::vector<std::string> r;
  for (int id : results) r.push_back(fmt::format("%{}", id));
  g.text = fmt::format("program @main({}) {{\n{}  return {}\n}}\n", header, body, fmt::join(r, ", "));
  return g;
}

std::vector<Array> random_args(const std::vector<std::pair<DType, Shape>>& inputs, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<Array> args;
  for (const auto& [dt, s] : inputs) {
    const auto count = static_cast<size_t>(num_elements(s));
    if (dt == DType::i32) {
      std::vector<int32_t> v(count);
      for (int32_t& x : v) x = rng() % 4 == 0 ? static_cast<int32_t>(rng() % 64) : static_cast<int32_t>(rng());
      args.push_back(Array::from(v, s));
    } else {
      std::vector<float> v(count);
      for (float& x : v) x = rng() % 8 == 0 ? u(rng) * 1e9f : u(rng);
      args.push_back(Array::from(v, s));
    }
  }
  return args;
}

// Bit-equal, but any two f32 NaNs are equal.
size_t mismatches(const Array& a, const Array& b) {
  const size_t n = static_cast<size_t>(a.size());
  size_t bad = 0;
  if (a.dtype() == DType::f32) {
    const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
    for (size_t i = 0; i < n; ++i)
      if (std::memcmp(&x[i], &y[i], 4) != 0 && !(std::isnan(x[i]) && std::isnan(y[i]))) {
        if (bad++ < 3) ADD_FAILURE() << "element " << i << ": fused " << x[i] << ", unfused " << y[i];
      }
  } else {
    const size_t bytes = n * static_cast<size_t>(dtype_size(a.dtype()));
    const auto* p = static_cast<const unsigned char*>(a.data());
    const auto* q = static_cast<const unsigned char*>(b.data());
    for (size_t i = 0; i < bytes; ++i) bad += p[i] != q[i];
  }
  return bad;
}

// Whether `what` appears on a line of a fused body (whose equations the printer indents by six).
bool in_a_body(const std::string& text, const std::string& what) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    const size_t start = text.rfind('\n', at) + 1;
    if (text.compare(start, 7, "      %") == 0) return true;
  }
  return false;
}

TEST(FusionIntProperty, FusedIntegerChainsComputeWhatUnfusedOnesDo) {
  int with_cipher = 0, with_iota = 0;
  const int count = 300;
  for (uint32_t seed = 1; seed <= count; ++seed) {
    const Generated g = generate(seed);
    SCOPED_TRACE(fmt::format("seed {}:\n{}", seed, g.text));
    Lowered lowered = parse_program(g.text);
    CompileOptions unfused_options;
    unfused_options.fuse = false;
    Compiled fused = lowered.compile(), unfused = lowered.compile(unfused_options);
    const std::string text = fused.as_text();
    with_cipher += in_a_body(text, "= threefry2x32");
    with_iota += in_a_body(text, "= iota");
    const std::vector<Array> args = random_args(g.inputs, seed);
    std::vector<Array> got = fused.run(args), want = unfused.run(args);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].dtype(), want[i].dtype());
      ASSERT_EQ(got[i].shape(), want[i].shape());
      EXPECT_EQ(mismatches(got[i], want[i]), 0u) << "output " << i;
    }
    EXPECT_EQ(fused.execution_stats().device_high_water_bytes, fused.memory_analysis().peak_memory_in_bytes);
    if (HasFailure()) break;
  }
  std::printf("%d of %d random programs had a fused threefry2x32, %d a fused iota\n", with_cipher, count, with_iota);
  // The generator makes fusible chains: most programs with a cipher or counters fuse them. (An
  // iota the program returns as it is stays a kernel of its own: the fuse pass wraps no lone
  // equation, so fewer programs fuse their counters than their ciphers.)
  EXPECT_GT(with_cipher, count / 5);
  EXPECT_GT(with_iota, count / 10);
}

}  // namespace
}  // namespace ferry
