#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "ferry/array.h"
#include "ir/limits.h"
#include "ir/type.h"
#include "runtime/backend.h"
#include "runtime/storage.h"

namespace ferry {

namespace detail {
std::shared_ptr<Storage> Storage::allocate(size_t bytes, MemoryKind kind, runtime::Backend& backend, bool zero,
                                           runtime::Tally* tally) {
  auto s = std::make_shared<Storage>();
  s->data = backend.memory(kind).allocate(bytes, tally);
  s->bytes = bytes;
  s->kind = kind;
  s->backend = &backend;
  if (zero && bytes) {
    if (s->host_accessible()) {
      std::memset(s->data, 0, bytes);
    } else {
      const runtime::Stream stream = backend.compute_stream();
      backend.fill(s->data, kind, 0, bytes, stream);
      backend.synchronize(stream);
    }
  }
  return s;
}

std::shared_ptr<Storage> Storage::adopt(void* data, size_t bytes, MemoryKind kind, runtime::Backend& backend) {
  auto s = std::make_shared<Storage>();
  s->data = data;
  s->bytes = bytes;
  s->kind = kind;
  s->backend = &backend;
  return s;
}
}  // namespace detail

namespace {
void check_shape(const Shape& shape, DType dtype, MemoryKind kind, std::string_view what) {
  ir::check_dtype(dtype, what);
  ir::check_memory_kind(kind, what);
  ir::check_size(dtype, shape, what);  // the rule the tracer and the parser apply (ir/limits.h)
}
}  // namespace

Array::Array(std::shared_ptr<detail::Storage> storage, DType dtype, Shape shape, MemoryKind kind)
    : storage_(std::move(storage)), dtype_(dtype), shape_(std::move(shape)), kind_(kind) {}

Array Array::from_bytes(const void* data, size_t bytes, DType dtype, Shape shape, MemoryKind kind) {
  check_shape(shape, dtype, kind, "Array::from");
  size_t want = static_cast<size_t>(num_elements(shape)) * dtype_size(dtype);
  if (bytes != want)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("Array::from: {} elements given for shape {} ({} elements)", bytes / dtype_size(dtype),
                            shape_string(shape), num_elements(shape)));
  if (data == nullptr && bytes > 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("Array::from: the data pointer is null but {} bytes were given for shape {}", bytes,
                            shape_string(shape)));
  // Refused rather than normalized, as the safetensors reader does: a byte other than 0 or 1 is
  // data of another type or garbage, and kernels disagree on what it means (logical ops read any
  // non-zero byte as true, eq compares the bytes).
  if (dtype == DType::boolean)
    if (int64_t i = ir::first_non_bool(data, static_cast<int64_t>(bytes)); i >= 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("Array::from_bytes: bool element {} is the byte {}; bools are 0 or 1", i,
                              static_cast<const unsigned char*>(data)[i]));
  runtime::Backend& cpu = runtime::cpu_backend();
  auto s = detail::Storage::allocate(bytes, kind, cpu, false);
  if (bytes) std::memcpy(s->data, data, bytes);
  return Array(std::move(s), dtype, std::move(shape), kind);
}

std::string_view Array::backend() const { return storage_ && storage_->backend ? storage_->backend->name() : "cpu"; }

Array Array::to_backend(std::string_view name) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "Array::to_backend: the Array is empty");
  check_not_donated("Array::to_backend");
  runtime::Backend& to = runtime::backend(name);
  runtime::Backend& from = *storage_->backend;
  auto s = detail::Storage::allocate(nbytes(), kind_, to, false);
  if (nbytes()) {
    // The backend that is not the CPU knows how to reach host memory; CPU to CPU is a memcpy.
    runtime::Backend& mover = to.name() != "cpu" ? to : from;
    const runtime::Stream stream = mover.compute_stream();
    mover.copy(s->data, storage_->data, nbytes(), stream);
    mover.synchronize(stream);
  }
  return Array(std::move(s), dtype_, shape_, kind_);
}

bool Array::host_readable() const { return !storage_ || storage_->host_accessible(); }

Array Array::host_copy() const {
  if (!storage_ || storage_->host_accessible()) return *this;
  return to_backend("cpu");
}

Array Array::allocate(DType dtype, Shape shape, MemoryKind kind) {
  check_shape(shape, dtype, kind, "Array::allocate");
  auto s = detail::Storage::allocate(static_cast<size_t>(num_elements(shape)) * dtype_size(dtype), kind,
                                     runtime::cpu_backend(), true);
  return Array(std::move(s), dtype, std::move(shape), kind);
}

void Array::check_not_donated(std::string_view what) const {
  if (storage_ && storage_->donated)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: the {} array was donated to a compiled call (donate_argnums); its buffer now belongs "
                            "to that call's output",
                            what, type_string(dtype_, shape_)));
}

bool Array::is_deleted() const { return storage_ && storage_->donated; }
const void* Array::data() const {
  check_not_donated("Array::data");
  return storage_ ? storage_->data : nullptr;
}
void* Array::mutable_data() {
  check_not_donated("Array::mutable_data");
  return storage_ ? storage_->data : nullptr;
}

void Array::check_read(DType requested) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "to_vector: the Array is empty");
  check_not_donated("to_vector");
  if (requested != dtype_)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("to_vector: the array is {} but {} was requested", type_string(dtype_, shape_), dtype_name(requested)));
}

std::vector<float> Array::half_to_floats() const {
  if (storage_ && !storage_->host_accessible()) return host_copy().half_to_floats();
  std::vector<float> out(static_cast<size_t>(size()));
  auto* p = static_cast<const uint16_t*>(data());
  for (size_t i = 0; i < out.size(); ++i) {
    if (dtype_ == DType::f16) {
      float16 h;
      h.bits = p[i];
      out[i] = static_cast<float>(h);
    } else {
      bfloat16 h;
      h.bits = p[i];
      out[i] = static_cast<float>(h);
    }
  }
  return out;
}

namespace {
std::string element_string(const Array& a, int64_t i) {
  const void* d = a.data();
  switch (a.dtype()) {
    case DType::f32: return fmt::format("{:.6g}", static_cast<const float*>(d)[i]);
    case DType::f64: return fmt::format("{:.10g}", static_cast<const double*>(d)[i]);
    case DType::f16: {
      float16 h;
      h.bits = static_cast<const uint16_t*>(d)[i];
      return fmt::format("{:.4g}", static_cast<float>(h));
    }
    case DType::bf16: {
      bfloat16 h;
      h.bits = static_cast<const uint16_t*>(d)[i];
      return fmt::format("{:.3g}", static_cast<float>(h));
    }
    case DType::i32: return fmt::format("{}", static_cast<const int32_t*>(d)[i]);
    case DType::boolean: return static_cast<const unsigned char*>(d)[i] ? "true" : "false";
  }
  return "?";
}
}  // namespace

std::string Array::to_string(int64_t max_elements) const {
  if (!defined()) return "Array(empty)";
  check_not_donated("Array::to_string");
  if (!storage_->host_accessible()) return host_copy().to_string(max_elements);
  std::string out = fmt::format("{}{{{}}} ", type_string(dtype_, shape_), memory_kind_name(kind_));
  int64_t n = size();
  if (shape_.empty()) return out + element_string(*this, 0);
  size_t r = shape_.size();
  if (n == 0) return out + std::string(r, '[') + std::string(r, ']');
  // Nested brackets, one level per dimension. block[d]: elements inside one bracket of depth d
  // (the whole array at depth 0, one row at depth r-1).
  std::vector<int64_t> block(r, 1);
  block[r - 1] = shape_[r - 1];
  for (size_t d = r - 1; d > 0; --d) block[d - 1] = block[d] * shape_[d - 1];
  // Elide the middle of long arrays, in whole rows when rows are short, so brackets stay balanced:
  // elements [0, head) and [tail_start, n) are shown, at most max_elements of them (the first one
  // more when the count is odd). With too few to show a tail, "..." ends the array instead.
  max_elements = std::max<int64_t>(max_elements, 0);
  int64_t head = n > max_elements ? (max_elements + 1) / 2 : n;
  int64_t tail_start = n > max_elements ? n - max_elements / 2 : n;
  int64_t row = block[r - 1];
  if (head < tail_start && row <= max_elements / 2 && row > 0) {
    head = std::max<int64_t>(row, head / row * row);
    tail_start = std::max(head, (tail_start + row - 1) / row * row);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (i == head && head < tail_start) {
      if (tail_start < n) {
        out += "..., ";
        i = tail_start;
      } else {
        // Nothing after the elision: close the brackets still open at `head` (all of them when
        // nothing was shown, which opens them first).
        size_t open = 0;
        for (size_t d = 0; d < r; ++d)
          if (head == 0 || head % block[d] != 0) ++open;
        if (head == 0) out += std::string(open, '[');
        return out + "..." + std::string(open, ']');
      }
    }
    for (size_t d = 0; d < r; ++d)
      if (i % block[d] == 0) out += "[";
    out += element_string(*this, i);
    int closes = 0;
    for (size_t d = 0; d < r; ++d)
      if ((i + 1) % block[d] == 0) ++closes;
    out += std::string(static_cast<size_t>(closes), ']');
    if (i + 1 < n) out += ", ";
  }
  return out;
}

bool Array::equals(const Array& other) const {
  // A donated array has no bytes to compare, whatever its type: refused, not unequal.
  check_not_donated("Array::equals (this array)");
  other.check_not_donated("Array::equals (the other array)");
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (!defined() || !other.defined()) return defined() == other.defined();
  if (!storage_->host_accessible() || !other.storage_->host_accessible()) return host_copy().equals(other.host_copy());
  return std::memcmp(data(), other.data(), nbytes()) == 0;
}

Array full(const Shape& shape, double value, DType dtype, MemoryKind kind) {
  ir::check_dtype(dtype, "full");
  ir::check_value(value, dtype, "full");  // as the traced constant: no undefined or value-changing cast
  Array a = Array::allocate(dtype, shape, kind);
  int64_t n = a.size();
  void* d = a.mutable_data();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::f32: static_cast<float*>(d)[i] = static_cast<float>(value); break;
      case DType::f64: static_cast<double*>(d)[i] = value; break;
      case DType::f16: static_cast<float16*>(d)[i] = float16(static_cast<float>(value)); break;
      case DType::bf16: static_cast<bfloat16*>(d)[i] = bfloat16(static_cast<float>(value)); break;
      case DType::i32: static_cast<int32_t*>(d)[i] = static_cast<int32_t>(value); break;
      case DType::boolean: static_cast<unsigned char*>(d)[i] = value != 0; break;
    }
  }
  return a;
}

Array ones(const Shape& shape, DType dtype, MemoryKind kind) { return full(shape, 1.0, dtype, kind); }
Array zeros(const Shape& shape, DType dtype, MemoryKind kind) { return Array::allocate(dtype, shape, kind); }

}  // namespace ferry
