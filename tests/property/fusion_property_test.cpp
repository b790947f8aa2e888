// Fusion on random f32 programs of elementwise work, broadcasts (of rows, scalars and smaller
// operands) and trailing-axis reductions: the fused program computes what the unfused one does,
// element for element (the fused kernel keeps the unfused kernels' arithmetic and summation order;
// only the sign of a zero max/min and a NaN's payload may differ, which == and isnan ignore), and
// its measured peak is its planned one. Shapes reach past one block of the fused kernel so that
// block edges, multi-row blocks and rows longer than a block are all exercised.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/fuse.h"
#include "ferry/ferry.h"
#include "driver/lowered.h"
#include "ir/parser.h"

namespace ferry {
namespace {

struct Value {
  int id;
  enum Kind { full, row, scalar } kind;
};

std::string dims_text(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

// A random program of `ops` equations over a domain with k trailing reduced axes.
struct Generated {
  std::string text;
  std::vector<Shape> inputs;
};

// With `barriers`, some equations are cummax along the first axis, which no group takes: a group
// whose values one reads is closed, and equations after it that read both form groups of their
// own, reading the closed group's values (which duplication may recompute in them instead).
Generated generate(uint32_t seed, bool barriers = false) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  // Domains: small, multi-row blocks, and rows longer than one block (the kernel's block is 4096).
  static const std::vector<Shape> domains = {{7},       {3, 5},     {2, 3, 4},  {64, 33},  {300, 50},
                                             {5, 5000}, {3, 9000},  {4, 7, 129}, {20000},  {1, 1}};
  Shape d = domains[static_cast<size_t>(pick(static_cast<int>(domains.size())))];
  const int rank = static_cast<int>(d.size());
  const int k = rank > 1 ? 1 + pick(rank - 1) : pick(2);  // reduced trailing axes (0: none)
  Shape outer(d.begin(), d.end() - k), inner(d.end() - k, d.end());
  const std::string D = fmt::format("f32{}", dims_text(d)), R = fmt::format("f32{}", dims_text(outer));
  const std::string B = fmt::format("f32{}", dims_text(inner.empty() ? Shape{d.back()} : inner));
  Shape bias_shape = inner.empty() ? Shape{d.back()} : inner;
  std::string bias_dims;
  {
    std::vector<int64_t> bd;
    for (int64_t i = rank - static_cast<int64_t>(bias_shape.size()); i < rank; ++i) bd.push_back(i);
    bias_dims = dims_text(bd);
  }
  std::vector<int64_t> od;
  for (int64_t i = 0; i < rank - k; ++i) od.push_back(i);
  const std::string row_dims = dims_text(od);

  Generated g;
  std::string body;
  int next = 0;
  std::vector<Value> vals;
  std::string header;
  auto input = [&](const std::string& type, const Shape& s, Value::Kind kind, bool usable) {
    header += fmt::format("{}%{}: {}", header.empty() ? "" : ", ", next, type);
    g.inputs.push_back(s);
    if (usable) vals.push_back({next, kind});
    return next++;
  };
  input(D, d, Value::full, true);
  const int bias = input(B, bias_shape, Value::full, false);
  if (k > 0) input(R, outer, Value::row, true);
  auto type_of = [&](Value::Kind kind) { return kind == Value::full ? D : kind == Value::row ? R : std::string("f32[]"); };
  auto any_of = [&](Value::Kind kind) -> Value {
    std::vector<Value> c;
    for (const Value& v : vals)
      if (v.kind == kind) c.push_back(v);
    if (c.empty()) return vals[0];
    return c[static_cast<size_t>(pick(static_cast<int>(c.size())))];
  };
  auto latest = [&](Value::Kind kind) -> Value {
    for (size_t i = vals.size(); i-- > 0;)
      if (vals[i].kind == kind) return vals[i];
    return vals[0];
  };
  // With barriers: half the time an operand from before the last barrier (another group's value).
  // (Not the values a barrier read: those are materialized anyway.)
  size_t barrier_at = 0;  // values before the last barrier
  std::vector<int> barrier_read;
  auto other = [&](Value::Kind kind) -> Value {
    std::vector<Value> c;
    const bool older = barriers && pick(2) == 0;
    for (size_t i = 0; older && i < barrier_at; ++i)
      if (vals[i].kind == kind && std::find(barrier_read.begin(), barrier_read.end(), vals[i].id) == barrier_read.end())
        c.push_back(vals[i]);
    if (c.empty()) return any_of(kind);
    return c[static_cast<size_t>(pick(static_cast<int>(c.size())))];
  };
  auto emit = [&](const std::string& rhs, Value::Kind kind, const std::string& type) {
    body += fmt::format("  %{} = {} : {}\n", next, rhs, type);
    vals.push_back({next, kind});
    return next++;
  };
  static const char* kUnary[] = {"neg", "exp", "tanh", "logistic", "abs", "sin", "cos", "log1p", "expm1", "sqrt",
                                 "rsqrt", "log", "erf", "sign", "floor", "round"};
  static const char* kBinary[] = {"add", "sub", "mul", "div", "max", "min", "pow"};
  static const char* kCompare[] = {"lt", "le", "gt", "ge", "eq", "ne"};
  static const char* kReduce[] = {"reduce_sum", "reduce_max", "reduce_min"};
  const int ops = barriers ? 10 + pick(20) : 4 + pick(14);
  for (int i = 0; i < ops; ++i) {
    const Value::Kind kind = (k > 0 && pick(3) == 0) ? Value::row : Value::full;
    // With barriers, each equation continues the chain of the latest value (so little is dead), and
    // its other operand is often from before the last barrier: from another group.
    const Value a = barriers ? latest(kind) : any_of(kind);
    switch (pick(barriers ? 11 : 9)) {
      case 9: case 10:
        barrier_at = vals.size();
        barrier_read.push_back(latest(Value::full).id);
        emit(fmt::format("cummax[axis=0, reverse=false] %{}", latest(Value::full).id), Value::full, D);
        break;
      case 8:  // identities, which a kernel may alias to their operand
        emit(fmt::format("{} %{}", pick(2) ? "stop_gradient" : "checkpoint_name", a.id), kind, type_of(kind));
        break;
      case 0: case 1:
        emit(fmt::format("{} %{}", kUnary[pick(16)], a.id), kind, type_of(kind));
        break;
      case 2: case 3: {
        const Value b = other(kind);
        emit(fmt::format("{} %{}, %{}", kBinary[pick(7)], a.id, b.id), kind, type_of(kind));
        break;
      }
      case 4: {  // with a scalar constant
        const int c = emit(fmt::format("constant[value={}, dtype=f32, shape=[]]", (pick(9) - 4) * 0.5), Value::scalar, "f32[]");
        emit(fmt::format("{} %{}, %{}", kBinary[pick(6)], a.id, c), kind, type_of(kind));
        break;
      }
      case 5:  // a broadcast: the bias along the trailing axes, or a row back over its row
        if (k > 0 && pick(2) == 0) {
          const Value r = any_of(Value::row);
          emit(fmt::format("broadcast_in_dim[shape={}, broadcast_dimensions={}] %{}", dims_text(d), row_dims, r.id),
               Value::full, D);
        } else {
          emit(fmt::format("broadcast_in_dim[shape={}, broadcast_dimensions={}] %{}", dims_text(d), bias_dims, bias),
               Value::full, D);
        }
        break;
      case 6:
        if (k > 0) {
          std::vector<int64_t> axes;
          for (int64_t x = rank - k; x < rank; ++x) axes.push_back(x);
          emit(fmt::format("{}[axes={}] %{}", kReduce[pick(3)], dims_text(axes), any_of(Value::full).id), Value::row, R);
        }
        break;
      default: {  // where(a < b, a, b)
        const Value b = other(kind);
        const std::string pt = kind == Value::full ? fmt::format("bool{}", dims_text(d)) : fmt::format("bool{}", dims_text(outer));
        body += fmt::format("  %{} = {} %{}, %{} : {}\n", next, kCompare[pick(6)], a.id, b.id, pt);
        const int p = next++;
        emit(fmt::format("select %{}, %{}, %{}", p, a.id, b.id), kind, type_of(kind));
      }
    }
  }
  // Return the last value and random earlier ones (results read outside a group).
  std::vector<int> results{vals.back().id};
  for (int i = pick(3); i > 0; --i) {
    const Value extra = vals[static_cast<size_t>(pick(static_cast<int>(vals.size())))];
    if (extra.kind != Value::scalar) results.push_back(extra.id);
  }
  std::vector<std::string> r;
  for (int id : results) r.push_back(fmt::format("%{}", id));
  g.text = fmt::format("program @main({}) {{\n{}  return {}\n}}\n", header, body, fmt::join(r, ", "));
  return g;
}

std::vector<Array> random_args(const std::vector<Shape>& shapes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<Array> args;
  for (const Shape& s : shapes) {
    std::vector<float> v(static_cast<size_t>(num_elements(s)));
    for (float& x : v) x = u(rng);
    args.push_back(Array::from(v, s));
  }
  return args;
}

struct Tally {
  int fused = 0;       // programs with fused equations
  int duplicated = 0;  // programs where a group recomputes values of another
};

// Fused == unfused element for element, and the measured peak is the planned one.
void check(uint32_t seed, bool barriers, Tally& tally) {
  const Generated g = generate(seed, barriers);
  SCOPED_TRACE(fmt::format("seed {}:\n{}", seed, g.text));
  Lowered lowered = parse_program(g.text);
  CompileOptions unfused_options;
  unfused_options.fuse = false;
  Compiled fused = lowered.compile(), unfused = lowered.compile(unfused_options);
  if (fused.as_text().find("= fused") != std::string::npos) ++tally.fused;
  {
    // What the pass does to the program it is given (the unfused pipeline's).
    compiler::FuseStats stats;
    compiler::fuse_elementwise_counting(*ir::parse(unfused.as_text()), stats);
    if (stats.recomputed > 0) ++tally.duplicated;
  }
  EXPECT_EQ(unfused.as_text().find("= fused"), std::string::npos);
  const std::vector<Array> args = random_args(g.inputs, seed);
  std::vector<Array> got = fused.run(args), want = unfused.run(args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    std::vector<float> a = got[i].to_vector<float>(), b = want[i].to_vector<float>();
    size_t bad = 0;
    for (size_t j = 0; j < a.size(); ++j)
      if (!(a[j] == b[j] || (std::isnan(a[j]) && std::isnan(b[j])))) {
        if (bad++ < 3) ADD_FAILURE() << "output " << i << " element " << j << ": fused " << a[j] << ", unfused " << b[j];
      }
    EXPECT_EQ(bad, 0u) << "output " << i;
  }
  // The plan is the memory, fused or not.
  EXPECT_EQ(fused.execution_stats().device_high_water_bytes, fused.memory_analysis().peak_memory_in_bytes);
}

TEST(FusionProperty, FusedProgramsComputeWhatUnfusedOnesDo) {
  Tally tally;
  const int count = 300;
  for (uint32_t seed = 1; seed <= count; ++seed) {
    check(seed, false, tally);
    if (HasFailure()) break;
  }
  std::printf("%d of %d random programs had fused equations\n", tally.fused, count);
  // Most programs have something to fuse (a few are a lone operation per group).
  EXPECT_GT(tally.fused, count * 2 / 3);
}

// Programs split by barriers, whose groups read each other's values: recomputing a producer in its
// readers repeats the same f32 operations in the same order, so the results stay the same bits.
TEST(FusionProperty, RecomputedProducersComputeWhatUnfusedOnesDo) {
  Tally tally;
  const int count = 300;
  for (uint32_t seed = 1; seed <= count; ++seed) {
    check(seed, true, tally);
    if (HasFailure()) break;
  }
  std::printf("%d of %d random programs with barriers had fused equations, %d recomputed a producer\n", tally.fused,
              count, tally.duplicated);
  EXPECT_GT(tally.duplicated, count / 10);
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// The pass fuses a reduction only while a row fits one block; the kernel also runs rows longer than
// that (one row per block, its slots in the declared workspace), which fused IR text can ask for.
TEST(FusionProperty, RowsLongerThanABlockFromText) {
  const std::string unfused =
      "program @main(%0: f32[3,20000]) {\n"
      "  %1 = reduce_max[axes=[1]] %0 : f32[3]\n"
      "  %2 = broadcast_in_dim[shape=[3,20000], broadcast_dimensions=[0]] %1 : f32[3,20000]\n"
      "  %3 = sub %0, %2 : f32[3,20000]\n"
      "  %4 = exp %3 : f32[3,20000]\n"
      "  %5 = reduce_sum[axes=[1]] %4 : f32[3]\n"
      "  %6 = broadcast_in_dim[shape=[3,20000], broadcast_dimensions=[0]] %5 : f32[3,20000]\n"
      "  %7 = div %4, %6 : f32[3,20000]\n"
      "  return %7, %5\n"
      "}\n";
  const std::string fused =
      "program @main(%0: f32[3,20000]) {\n"
      "  %1, %2 = fused %0 : f32[3,20000], f32[3] {\n"
      "    program @fused(%0: f32[3,20000]) {\n"
      "      %1 = reduce_max[axes=[1]] %0 : f32[3]\n"
      "      %2 = broadcast_in_dim[shape=[3,20000], broadcast_dimensions=[0]] %1 : f32[3,20000]\n"
      "      %3 = sub %0, %2 : f32[3,20000]\n"
      "      %4 = exp %3 : f32[3,20000]\n"
      "      %5 = reduce_sum[axes=[1]] %4 : f32[3]\n"
      "      %6 = broadcast_in_dim[shape=[3,20000], broadcast_dimensions=[0]] %5 : f32[3,20000]\n"
      "      %7 = div %4, %6 : f32[3,20000]\n"
      "      return %7, %5\n"
      "    }\n"
      "  }\n"
      "  return %1, %2\n"
      "}\n";
  Compiled f = detail::parse_program_with_compiler_ops(fused).compile(), u = parse_program(unfused).compile();
  EXPECT_GT(f.memory_analysis().temp_size_in_bytes, 0) << "the long rows' slots are a declared workspace";
  const std::vector<Array> args = random_args({{3, 20000}}, 11);
  std::vector<Array> got = f.run(args), want = u.run(args);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>()) << "output " << i;
  EXPECT_EQ(f.execution_stats().device_high_water_bytes, f.memory_analysis().peak_memory_in_bytes);
}

}  // namespace
}  // namespace ferry
