// Bad input at every public entry point: each gives a ferry::Error with a clear code and a message
// naming what is wrong, and leaves ferry usable (a good program compiles and runs after each).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "ferry/ferry.h"
#include "driver/lowered.h"
#include "support/error_of.h"
#include "support/memory_check.h"

namespace fy = ferry;
using ::testing::HasSubstr;
using fy::ErrorCode;
using Xs = std::vector<fy::Tensor>;

namespace {

const fy::MemoryKind kBadKind = static_cast<fy::MemoryKind>(7);
const fy::DType kBadDtype = static_cast<fy::DType>(9);

// A good program still lowers, compiles and runs, with the right answer.
void expect_usable() {
  auto f = fy::jit([](fy::Tensor x) { return fy::sum(x * 2.0); });
  std::vector<fy::Array> out = fy::testing::jit_checked(f, fy::ones({2, 3}));
  EXPECT_EQ(out.at(0).to_vector<float>(), std::vector<float>{12.0f});
}

void expect_error(ErrorCode code, const std::string& needle, const std::function<void()>& f) {
  fy::Error e = fy::testing::error_of(f);
  EXPECT_EQ(e.code(), code) << e.what();
  EXPECT_THAT(e.message(), HasSubstr(needle));
  expect_usable();
}

fy::Lowered lower1(const std::function<fy::Tensor(fy::Tensor)>& f, fy::ShapeDtype spec = {{2, 3}}) {
  return fy::jit([&](fy::Tensor x) { return f(x); }).lower(spec);
}

TEST(BadInput, WrongShapes) {
  expect_error(ErrorCode::invalid_argument, "f32[2,3] and f32[4]", [] {
    fy::jit([](fy::Tensor a, fy::Tensor b) { return a + b; }).lower(fy::ones({2, 3}), fy::ones({4}));
  });
  expect_error(ErrorCode::invalid_argument, "dot_general: contracting dimension sizes differ", [] {
    fy::jit([](fy::Tensor a, fy::Tensor b) { return fy::matmul(a, b); }).lower(fy::ones({2, 3}), fy::ones({4, 5}));
  });
  expect_error(ErrorCode::invalid_argument, "reshape", [] { lower1([](fy::Tensor x) { return fy::reshape(x, {7}); }); });
  expect_error(ErrorCode::invalid_argument, "transpose", [] { lower1([](fy::Tensor x) { return fy::transpose(x, {0, 0}); }); });
  expect_error(ErrorCode::invalid_argument, "slice", [] { lower1([](fy::Tensor x) { return fy::slice(x, {0, 0}, {3, 3}); }); });
  expect_error(ErrorCode::invalid_argument, "broadcast_in_dim", [] {
    lower1([](fy::Tensor x) { return fy::broadcast_in_dim(x, {2, 3}, {0}); });
  });
  expect_error(ErrorCode::invalid_argument, "concatenate", [] {
    lower1([](fy::Tensor x) { return fy::concatenate({}, 0); });
  });
  expect_error(ErrorCode::invalid_argument, "reduce", [] { lower1([](fy::Tensor x) { return fy::sum(x, {5}); }); });
  expect_error(ErrorCode::invalid_argument, "dynamic_slice", [] {
    lower1([](fy::Tensor x) { return fy::dynamic_slice(x, {fy::constant(0, {}, fy::DType::i32)}, {1, 1}); });
  });
  expect_error(ErrorCode::invalid_argument, "negative", [] { fy::ones({2, -3}); });
  expect_error(ErrorCode::invalid_argument, "negative", [] { lower1([](fy::Tensor x) { return x; }, {{-1}}); });
}

TEST(BadInput, WrongDtypes) {
  expect_error(ErrorCode::invalid_argument, "f64", [] {
    fy::jit([](fy::Tensor a, fy::Tensor b) { return a * b; }).lower(fy::ones({2}), fy::ones({2}, fy::DType::f64));
  });
  expect_error(ErrorCode::invalid_argument, "dynamic_slice", [] {
    lower1([](fy::Tensor x) { return fy::dynamic_slice(x, {fy::constant(0), fy::constant(0)}, {1, 1}); });
  });
  expect_error(ErrorCode::invalid_argument, "to_vector", [] { fy::ones({2}).to_vector<double>(); });
  expect_error(ErrorCode::invalid_argument, "unknown dtype", [] { fy::ones({2}, kBadDtype); });
  expect_error(ErrorCode::invalid_argument, "unknown dtype", [] { lower1([](fy::Tensor x) { return x; }, {{2}, kBadDtype}); });
  expect_error(ErrorCode::invalid_argument, "unknown dtype", [] { lower1([](fy::Tensor x) { return fy::convert(x, kBadDtype); }); });
}

TEST(BadInput, UnknownMemoryKinds) {
  expect_error(ErrorCode::invalid_argument, "unknown memory kind", [] {
    lower1([](fy::Tensor x) { return fy::device_put(x, kBadKind); });
  });
  expect_error(ErrorCode::invalid_argument, "unknown memory kind", [] { lower1([](fy::Tensor x) { return x; }, {{2}, fy::DType::f32, kBadKind}); });
  expect_error(ErrorCode::invalid_argument, "unknown memory kind", [] {
    fy::Array::from(std::vector<float>{1, 2}, {2}, kBadKind);
  });
  expect_error(ErrorCode::invalid_argument, "unknown memory kind", [] {
    fy::policies::save_and_offload_only_these_names({}, {"x"}, fy::MemoryKind::device, kBadKind);
  });
  expect_error(ErrorCode::invalid_argument, "unknown memory kind", [] {
    fy::policies::offload_dot_with_no_batch_dims(kBadKind, fy::MemoryKind::pinned_host);
  });
  // A custom policy that answers with an unknown kind.
  expect_error(ErrorCode::invalid_argument, "unknown memory kind", [] {
    auto policy = fy::Policy([](const fy::Equation&) -> fy::Decision { return fy::Offloadable{fy::MemoryKind::device, kBadKind}; });
    fy::jit([&](fy::Tensor x) {
      return fy::grad([&](fy::Tensor y) { return fy::sum(fy::checkpoint([](fy::Tensor z) { return fy::sin(z); }, policy)(y)); })(x);
    }).lower(fy::ones({3}));
  });
}

TEST(BadInput, NamesAndPolicies) {
  expect_error(ErrorCode::invalid_argument, "name is empty", [] { lower1([](fy::Tensor x) { return fy::checkpoint_name(x, ""); }); });
  expect_error(ErrorCode::invalid_argument, "'a' is both saved and offloaded", [] {
    fy::policies::save_and_offload_only_these_names({"a", "b"}, {"a"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host);
  });
}

TEST(BadInput, DeviceLimits) {
  fy::Lowered l = lower1([](fy::Tensor x) { return fy::sum(fy::sin(x)); });
  fy::Compiled unlimited = l.compile({.device_memory_limit = 0});  // 0 means no limit
  EXPECT_GT(unlimited.memory_analysis().peak_memory_in_bytes, 0);
  fy::testing::run_checked(unlimited, {fy::ones({2, 3})});
  expect_error(ErrorCode::invalid_argument, "device_memory_limit", [&] { l.compile({.device_memory_limit = -1}); });
  expect_error(ErrorCode::resource_exhausted, "limit", [&] { l.compile({.device_memory_limit = 1}); });
  expect_error(ErrorCode::unimplemented, "backend", [&] { l.compile({.backend = "tpu"}); });
}

TEST(BadInput, HostAllocationFailures) {
  // More than any machine has: RESOURCE_EXHAUSTED (or INVALID_ARGUMENT where the size overflows).
  fy::Error huge = fy::testing::error_of([] { fy::Array::allocate(fy::DType::f32, {int64_t{1} << 46}); });
  EXPECT_EQ(huge.code(), ErrorCode::resource_exhausted) << huge.what();
  EXPECT_THAT(huge.message(), HasSubstr("bytes"));
  expect_usable();
  expect_error(ErrorCode::invalid_argument, "too large", [] {
    fy::Array::allocate(fy::DType::f32, {int64_t{1} << 40, int64_t{1} << 40});
  });
  expect_error(ErrorCode::invalid_argument, "too large", [] { fy::zeros({int64_t{1} << 62, 4}); });
  expect_error(ErrorCode::invalid_argument, "3 elements given for shape [2,2]", [] {
    std::vector<float> three{1, 2, 3};
    fy::Array::from(three, {2, 2});
  });
  // A program whose arena cannot be had: compiling plans it, running fails cleanly.
  expect_error(ErrorCode::resource_exhausted, "bytes", [] {
    fy::Lowered l = lower1([](fy::Tensor x) {
      return fy::sum(fy::broadcast_in_dim(x, {int64_t{1} << 22, int64_t{1} << 22, 2, 3}, {2, 3}));
    });
    fy::Compiled c = l.compile();
    c.run({fy::ones({2, 3})});
  });
}

TEST(BadInput, ParseGarbage) {
  for (const std::string& text : std::vector<std::string>{"", "garbage", "program", "program @main(", "program @main(%0: f32[2]) {\n  return %1\n}",
                           "program @main(%0: f32[99999999999999999999]) {\n  return %0\n}",
                           "program @main(%0: f32[2]) {\n  %1 = sin %0 : f32[3]\n  return %1\n}",
                           std::string("\0\xff\xfe", 3)})
    expect_error(ErrorCode::invalid_argument, "", [&] { fy::parse_program(text); });
}

TEST(BadInput, Transformations) {
  expect_error(ErrorCode::invalid_argument, "scalar", [] {
    fy::jit([](fy::Tensor x) { return fy::grad([](fy::Tensor y) { return fy::sin(y); })(x); }).lower(fy::ones({3}));
  });
  expect_error(ErrorCode::invalid_argument, "scalar", [] {
    fy::jit([](fy::Tensor x) { return fy::grad([](fy::Tensor y) { return fy::sum(fy::convert(y, fy::DType::i32)); })(x); })
        .lower(fy::ones({3}));
  });
  // Carries of another type than init, and another structure.
  expect_error(ErrorCode::invalid_argument, "scan", [] {
    lower1([](fy::Tensor x) {
      return fy::scan([](fy::Tensor c, fy::Tensor r) { return std::pair{fy::sum(c), fy::Tensor{}}; }, x, x).carry;
    });
  });
  expect_error(ErrorCode::invalid_argument, "scan", [] {
    lower1([](fy::Tensor x) {
      Xs init{x, x};
      return fy::scan([](Xs c, fy::Tensor r) { return std::pair{Xs{c[0]}, fy::Tensor{}}; }, init, x).carry[0];
    });
  });
  expect_error(ErrorCode::invalid_argument, "scan", [] {  // xs of different lengths
    lower1([](fy::Tensor x) {
      Xs xs{x, fy::ones_like(fy::transpose(x, {1, 0}))};
      return fy::scan([](fy::Tensor c, Xs r) { return std::pair{c, fy::Tensor{}}; }, fy::sum(x), xs).carry;
    });
  });
  expect_error(ErrorCode::invalid_argument, "length", [] {  // no xs and no length
    lower1([](fy::Tensor x) { return fy::scan([](fy::Tensor c, fy::Tensor) { return std::pair{c, fy::Tensor{}}; }, x, fy::Tensor{}).carry; });
  });
  expect_error(ErrorCode::invalid_argument, "undefined", [] { lower1([](fy::Tensor x) { return fy::sin(fy::Tensor{}); }); });
  expect_error(ErrorCode::invalid_argument, "undefined", [] { lower1([](fy::Tensor x) { return fy::Tensor{}; }); });
}

TEST(BadInput, TensorsOutsideTheirTrace) {
  fy::Tensor escaped;
  lower1([&](fy::Tensor x) {
    escaped = x;
    return x;
  });
  expect_error(ErrorCode::invalid_argument, "trace", [&] { fy::sin(escaped); });
  expect_error(ErrorCode::invalid_argument, "trace", [&] { lower1([&](fy::Tensor x) { return x + escaped; }); });
  expect_error(ErrorCode::invalid_argument, "trace", [] { fy::constant(1.0); });
}

TEST(BadInput, RunWithArgumentsOfTheWrongKind) {
  fy::Compiled c = lower1([](fy::Tensor x) { return fy::sum(x); }).compile();
  expect_error(ErrorCode::invalid_argument, "takes 1 argument(s), got 0", [&] { c.run({}); });
  expect_error(ErrorCode::invalid_argument, "argument", [&] { c.run({fy::ones({2, 3}), fy::ones({2, 3})}); });
  expect_error(ErrorCode::invalid_argument, "f32[3,2]", [&] { c.run({fy::ones({3, 2})}); });
  expect_error(ErrorCode::invalid_argument, "f64", [&] { c.run({fy::ones({2, 3}, fy::DType::f64)}); });
  expect_error(ErrorCode::invalid_argument, "pinned_host", [&] {
    c.run({fy::Array::from(std::vector<float>(6, 1.0f), {2, 3}, fy::MemoryKind::pinned_host)});
  });
  expect_error(ErrorCode::invalid_argument, "empty", [&] { c.run({fy::Array{}}); });
  expect_error(ErrorCode::invalid_argument, "trace", [&] { c.run_traced({fy::ones({2, 3})}, "/nonexistent/dir/trace.json"); });
}

}  // namespace

namespace {

TEST(BadInput, NullData) {
  expect_error(ErrorCode::invalid_argument, "null", [] { fy::Array::from_bytes(nullptr, 12, fy::DType::f32, {3}); });
  // Nothing to read: a null pointer for no bytes is fine.
  EXPECT_EQ(fy::Array::from_bytes(nullptr, 0, fy::DType::f32, {0}).size(), 0);
}

TEST(BadInput, CostModelRates) {
  fy::Lowered l = lower1([](fy::Tensor x) { return fy::sum(fy::sin(x)); });
  for (double rate : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    expect_error(ErrorCode::invalid_argument, "link_bandwidth_bytes_per_s", [&] {
      l.compile({.rates = fy::Rates{.link_bandwidth_bytes_per_s = rate}});
    });
    expect_error(ErrorCode::invalid_argument, "compute_flops_per_s",
                 [&] { l.compile({.rates = fy::Rates{.compute_flops_per_s = rate}}); });
  }
}

fy::Lowered differentiate_with(const fy::Policy& policy) {
  return fy::jit([&](fy::Tensor x) {
    return fy::grad([&](fy::Tensor y) {
      return fy::sum(fy::checkpoint([](fy::Tensor z) { return fy::sin(fy::checkpoint_name(fy::sin(z), "x")); }, policy)(y));
    })(x);
  }).lower(fy::ones({3}));
}

TEST(BadInput, PoliciesThatThrow) {
  // Whatever a custom policy throws comes out as a ferry::Error naming the policy and the equation.
  expect_error(ErrorCode::invalid_argument, "checkpoint policy 'exploding' failed on sin (f32[3]): boom", [] {
    differentiate_with(fy::Policy([](const fy::Equation&) -> fy::Decision { throw std::runtime_error("boom"); }, "exploding"));
  });
  expect_error(ErrorCode::invalid_argument, "not a std::exception", [] {
    differentiate_with(fy::Policy([](const fy::Equation&) -> fy::Decision { throw 42; }, "integer"));
  });
  // A ferry::Error from inside keeps its code and gains the policy's name.
  expect_error(ErrorCode::invalid_argument, "policy 'careless' failed on sin (f32[3]): dot_dims", [] {
    differentiate_with(fy::Policy([](const fy::Equation& e) -> fy::Decision {
      return e.dot_dims().lhs_batch.empty() ? fy::Decision{fy::Saveable{}} : fy::Decision{fy::Recompute{}};
    }, "careless"));
  });
}

TEST(BadInput, OffloadFromAnotherMemoryKind) {
  // The values live on the device: an offload that says they start in host memory is a mistake.
  expect_error(ErrorCode::invalid_argument, "offloads sin (f32[3]) from pinned_host to unpinned_host, but the value lives in device", [] {
    differentiate_with(fy::Policy([](const fy::Equation&) -> fy::Decision {
      return fy::Offloadable{fy::MemoryKind::pinned_host, fy::MemoryKind::unpinned_host};
    }));
  });
  expect_error(ErrorCode::invalid_argument, "but the value lives in device", [] {
    differentiate_with(fy::policies::save_and_offload_only_these_names({}, {"x"}, fy::MemoryKind::unpinned_host,
                                                                       fy::MemoryKind::pinned_host));
  });
  // The matching kind compiles and runs.
  fy::Lowered ok = differentiate_with(
      fy::policies::save_and_offload_only_these_names({}, {"x"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host));
  fy::testing::run_checked(ok.compile(), {fy::ones({3})});
}

// Copies the runtime cannot honour are rejected by the verifier (INVALID_ARGUMENT), never INTERNAL.
TEST(BadInput, CopyDestinationsReadOutsideTheirPair) {
  const std::string header = "program @main(%0: f32[4]) {\n  %1 = copy_start[dst=pinned_host] %0 : f32[4]{pinned_host}\n";
  for (const std::string& rest : std::vector<std::string>{
           // read after its copy_done
           "  %2 = copy_done %1, %0 : f32[4]{pinned_host}\n  %3 = device_put[dst=device] %1 : f32[4]\n  return %3\n}\n",
           // read while the copy may still write it
           "  %2 = device_put[dst=device] %1 : f32[4]\n  %3 = copy_done %1, %0 : f32[4]{pinned_host}\n  return %2\n}\n",
           // returned
           "  %2 = copy_done %1, %0 : f32[4]{pinned_host}\n  return %1\n}\n"})
    expect_error(ErrorCode::invalid_argument, "destination of a copy_start", [&] { fy::detail::parse_program_with_compiler_ops(header + rest); });
}

TEST(BadInput, UnusedCopyDone) {
  // An unused copy pair is dead code like any other: compiling removes both halves and runs.
  fy::Lowered l = fy::detail::parse_program_with_compiler_ops(
      "program @main(%0: f32[4]) {\n  %1 = copy_start[dst=pinned_host] %0 : f32[4]{pinned_host}\n"
      "  %2 = copy_done %1, %0 : f32[4]{pinned_host}\n  %3 = sin %0 : f32[4]\n  return %3\n}\n");
  std::vector<fy::Array> out = fy::testing::run_checked(l.compile(), {fy::ones({4})});
  EXPECT_FLOAT_EQ(out.at(0).to_vector<float>().at(0), std::sin(1.0f));
}

}  // namespace
