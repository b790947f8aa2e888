// Shared by the kernel tests: guarded buffers of any dtype, element access as double, seeded random
// data, index helpers, and a runner that calls p's kernel on the backend under test and checks no
// byte outside the result buffers changed. The backend under test is FERRY_KERNEL_TEST_BACKEND
// ("cpu" when unset): ctest runs the *Kernel.* suites once per backend the build has
// (tests/CMakeLists.txt), and kernel_backend_env.cpp skips them all, saying why, where that backend
// cannot run (a CUDA build on a machine without a GPU).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ferry/types.h"
#include "ir/program.h"
#include "runtime/backend.h"
#include "runtime/cpu/kernels.h"

namespace ferry::kernel_test {

// Dense row-major storage with guard bytes on both sides. Results start filled with a poison
// pattern so an element a kernel forgets to write shows up as a mismatch.
class Buffer {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kPoison = 0xA5;

  Buffer() = default;
  Buffer(DType dtype, Shape shape) : type_{dtype, std::move(shape), MemoryKind::device} {
    bytes_.assign(kGuard * 2 + static_cast<size_t>(type_.size_bytes()), kPoison);
  }

  const ir::Type& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int64_t size() const { return type_.num_elements(); }
  void* data() { return bytes_.data() + kGuard; }
  const void* data() const { return bytes_.data() + kGuard; }
  template <class T> T* as() { return static_cast<T*>(data()); }
  template <class T> const T* as() const { return static_cast<const T*>(data()); }

  double get(int64_t i) const {
    const auto k = static_cast<size_t>(i);
    switch (dtype()) {
      case DType::f32: return as<float>()[k];
      case DType::f64: return as<double>()[k];
      case DType::f16: return static_cast<float>(as<float16>()[k]);
      case DType::bf16: return static_cast<float>(as<bfloat16>()[k]);
      case DType::i32: return as<int32_t>()[k];
      case DType::boolean: return as<uint8_t>()[k];
    }
    return 0;
  }
  // Stores v rounded to the dtype (i32 truncates; bool is v != 0).
  void set(int64_t i, double v) {
    const auto k = static_cast<size_t>(i);
    switch (dtype()) {
      case DType::f32: as<float>()[k] = static_cast<float>(v); break;
      case DType::f64: as<double>()[k] = v; break;
      case DType::f16: as<float16>()[k] = float16(static_cast<float>(v)); break;
      case DType::bf16: as<bfloat16>()[k] = bfloat16(static_cast<float>(v)); break;
      case DType::i32: as<int32_t>()[k] = static_cast<int32_t>(v); break;
      case DType::boolean: as<uint8_t>()[k] = v != 0; break;
    }
  }
  std::vector<double> values() const {
    std::vector<double> v(static_cast<size_t>(size()));
    for (int64_t i = 0; i < size(); ++i) v[static_cast<size_t>(i)] = get(i);
    return v;
  }
  bool guards_intact() const {
    for (size_t i = 0; i < kGuard; ++i)
      if (bytes_[i] != kPoison || bytes_[bytes_.size() - 1 - i] != kPoison) return false;
    return true;
  }
  // Every byte, guards included (to move the buffer to a device and back whole).
  void* raw() { return bytes_.data(); }
  const void* raw() const { return bytes_.data(); }
  size_t raw_size() const { return bytes_.size(); }
  bool same_bytes(const Buffer& o) const {
    return type_.size_bytes() == o.type_.size_bytes() &&
           std::memcmp(data(), o.data(), static_cast<size_t>(type_.size_bytes())) == 0;
  }

 private:
  ir::Type type_;
  std::vector<uint8_t> bytes_;
};

inline std::mt19937& rng() {
  static std::mt19937 g(20240607);
  return g;
}

// Values exact in every dtype for data movement: small integers, halves for floats.
inline Buffer random_buffer(DType dtype, Shape shape, double lo = -4, double hi = 4) {
  Buffer b(dtype, std::move(shape));
  std::uniform_real_distribution<double> u(lo, hi);
  std::uniform_int_distribution<int> bit(0, 1);
  for (int64_t i = 0; i < b.size(); ++i) {
    if (dtype == DType::boolean) b.set(i, bit(rng()));
    else if (dtype == DType::i32) b.set(i, std::floor(u(rng()) * 8));
    else b.set(i, u(rng()));
  }
  return b;
}

inline Buffer filled(DType dtype, Shape shape, const std::vector<double>& v) {
  Buffer b(dtype, std::move(shape));
  for (int64_t i = 0; i < b.size(); ++i) b.set(i, v.at(static_cast<size_t>(i)));
  return b;
}

inline Buffer scalar_i32(int32_t v) { return filled(DType::i32, {}, {static_cast<double>(v)}); }

// The backend the kernel tests run on (FERRY_KERNEL_TEST_BACKEND, "cpu" when unset).
inline std::string kernel_backend_name() {
  const char* name = std::getenv("FERRY_KERNEL_TEST_BACKEND");
  return name && *name ? name : "cpu";
}

// Device copies of guarded buffers (whole, guards included) on a backend whose memory the host
// cannot touch; given back when done.
class DeviceCopies {
 public:
  explicit DeviceCopies(runtime::Backend& b) : backend_(b), memory_(b.memory(MemoryKind::device)) {}
  ~DeviceCopies() {
    for (auto [p, n] : blocks_) memory_.deallocate(p, n);
  }
  // A device block holding `bytes` copied from `host`.
  char* put(const void* host, size_t bytes) {
    char* p = static_cast<char*>(memory_.allocate(bytes));
    blocks_.emplace_back(p, bytes);
    if (bytes) backend_.copy(p, host, bytes, backend_.compute_stream());
    return p;
  }

 private:
  runtime::Backend& backend_;
  runtime::MemoryResource& memory_;
  std::vector<std::pair<char*, size_t>> blocks_;
};

// Runs p's kernel on the backend under test on `inputs` into fresh buffers of `out_types`; checks
// every guard (inputs included) and that inputs were not modified.
inline std::vector<Buffer> run(Primitive p, ir::Params params, const std::vector<const Buffer*>& inputs,
                               const std::vector<std::pair<DType, Shape>>& out_types) {
  ir::Equation eq;
  eq.prim = p;
  eq.params = std::move(params);
  std::vector<Buffer> outs;
  for (const auto& [d, s] : out_types) outs.emplace_back(d, s);
  std::vector<Buffer> before;
  std::vector<runtime::ConstView> in_views;
  std::vector<runtime::MutView> out_views;
  for (const Buffer* b : inputs) {
    before.push_back(*b);
    in_views.push_back({b->data(), &b->type()});
  }
  for (Buffer& b : outs) out_views.push_back({b.data(), &b.type()});
  runtime::Backend& backend = runtime::backend(kernel_backend_name());
  runtime::KernelFn fn = backend.kernel(p);
  EXPECT_NE(fn, nullptr) << primitive_name(p) << " on " << backend.name();
  if (fn == nullptr) return outs;
  // Exactly the workspace the kernel declares for these types: taking more is an error.
  std::vector<const ir::Type*> in_types, out_types_seen;
  for (const Buffer* b : inputs) in_types.push_back(&b->type());
  for (Buffer& b : outs) out_types_seen.push_back(&b.type());
  int64_t workspace_bytes = 0;
  if (runtime::WorkspaceSizeFn size = backend.workspace_size(p)) workspace_bytes = size(eq, in_types, out_types_seen);
  const runtime::Stream stream = backend.compute_stream();
  if (backend.memory(MemoryKind::device).host_accessible()) {
    std::vector<std::byte> scratch(static_cast<size_t>(workspace_bytes) + 64);
    auto* aligned = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
    runtime::Workspace workspace(aligned, workspace_bytes);
    fn(eq, in_views, out_views, workspace, stream);
  } else {
    // Every buffer goes to the device whole (guards included) and comes back whole, so the checks
    // below see what the kernel did to every byte.
    DeviceCopies device(backend);
    std::vector<char*> in_blocks, out_blocks;
    for (size_t i = 0; i < inputs.size(); ++i) {
      in_blocks.push_back(device.put(inputs[i]->raw(), inputs[i]->raw_size()));
      in_views[i].data = in_blocks.back() + Buffer::kGuard;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      out_blocks.push_back(device.put(outs[i].raw(), outs[i].raw_size()));
      out_views[i].data = out_blocks.back() + Buffer::kGuard;
    }
    runtime::Workspace workspace(device.put(nullptr, 0), 0);
    if (workspace_bytes > 0) {
      std::vector<std::byte> zeros(static_cast<size_t>(workspace_bytes));
      workspace = runtime::Workspace(device.put(zeros.data(), zeros.size()), workspace_bytes);
    }
    fn(eq, in_views, out_views, workspace, stream);
    std::vector<Buffer> inputs_after;
    for (size_t i = 0; i < inputs.size(); ++i) {
      inputs_after.push_back(*inputs[i]);
      backend.copy(inputs_after.back().raw(), in_blocks[i], inputs[i]->raw_size(), stream);
    }
    for (size_t i = 0; i < outs.size(); ++i) backend.copy(outs[i].raw(), out_blocks[i], outs[i].raw_size(), stream);
    backend.synchronize(stream);
    for (size_t i = 0; i < inputs.size(); ++i)
      EXPECT_TRUE(inputs_after[i].guards_intact() && inputs_after[i].same_bytes(before[i]))
          << "input " << i << " or its guards modified on the device";
  }
  for (size_t i = 0; i < outs.size(); ++i) EXPECT_TRUE(outs[i].guards_intact()) << "result " << i << " overrun";
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_TRUE(inputs[i]->same_bytes(before[i])) << "input " << i << " modified";
  return outs;
}

inline Buffer run1(Primitive p, ir::Params params, const std::vector<const Buffer*>& inputs, DType dtype, Shape shape) {
  return std::move(run(p, std::move(params), inputs, {{dtype, std::move(shape)}})[0]);
}

// Row-major multi-index helpers for the reference implementations.
inline std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}
inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

// Relative tolerance for results computed in a dtype (one or a few roundings).
inline double tolerance(DType d) {
  switch (d) {
    case DType::f32: return 2e-6;
    case DType::f64: return 1e-13;
    case DType::f16: return 2e-3;
    case DType::bf16: return 1.6e-2;
    default: return 0;
  }
}

// Expects got == want elementwise: exactly for i32/bool, within `rel` (scaled by max(1, |want|))
// for floats; NaN matches NaN, infinities match exactly.
inline void expect_close(const Buffer& got, const std::vector<double>& want, double rel, const std::string& what) {
  ASSERT_EQ(static_cast<size_t>(got.size()), want.size()) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.size() && failures < 5; ++i) {
    const double g = got.get(i), w = want[static_cast<size_t>(i)];
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else ok = std::fabs(g - w) <= rel * std::max(1.0, std::fabs(w));
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w;
    }
  }
}
inline void expect_close(const Buffer& got, const std::vector<double>& want, const std::string& what) {
  expect_close(got, want, tolerance(got.dtype()), what);
}

inline const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> d{DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::boolean};
  return d;
}
inline const std::vector<DType>& float_dtypes() {
  static const std::vector<DType> d{DType::f32, DType::f64, DType::f16, DType::bf16};
  return d;
}
inline std::string name(DType d) { return std::string(dtype_name(d)); }

}  // namespace ferry::kernel_test
