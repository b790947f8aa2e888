// Array: concrete data (dtype, shape, memory kind) passed to and returned from compiled programs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ferry/error.h"
#include "ferry/types.h"

namespace ferry {

namespace detail {
struct Storage;  // the bytes, from the memory resource of the array's kind, which counts them
}

class Array {
 public:
  Array() = default;

  // Copies `data` (row-major, num_elements(shape) values) into a new array.
  template <class T>
  static Array from(const std::vector<T>& data, Shape shape, MemoryKind kind = MemoryKind::device) {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<unsigned char> bytes(data.begin(), data.end());
      return from_bytes(bytes.data(), bytes.size(), DType::boolean, std::move(shape), kind);
    } else {
      return from_bytes(data.data(), data.size() * sizeof(T), dtype_of<T>(), std::move(shape), kind);
    }
  }
  // A rank-0 array.
  template <class T> static Array scalar(T value) { return from(std::vector<T>{value}, {}); }
  // Arrays made here live on the "cpu" backend; to_backend() copies one to another backend. Every
  // byte of a bool array must be 0 or 1 (INVALID_ARGUMENT otherwise, as load() refuses such a file):
  // another byte is data of another type, and ops would disagree on what it means.
  static Array from_bytes(const void* data, size_t bytes, DType dtype, Shape shape,
                          MemoryKind kind = MemoryKind::device);
  // Zero-filled storage of the given type.
  static Array allocate(DType dtype, Shape shape, MemoryKind kind = MemoryKind::device);
  // An array over storage the runtime made (a compiled call's outputs).
  Array(std::shared_ptr<detail::Storage> storage, DType dtype, Shape shape, MemoryKind kind);

  bool defined() const { return storage_ != nullptr; }
  // True once the array was donated to a compiled call (jit's donate_argnums): its buffer belongs
  // to that call's output, and reading it (data(), to_vector(), ...) or passing it to another call
  // is INVALID_ARGUMENT. Copies of an Array share its buffer, so they are donated with it.
  bool is_deleted() const;
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  MemoryKind memory_kind() const { return kind_; }
  int64_t size() const { return num_elements(shape_); }
  size_t nbytes() const { return static_cast<size_t>(size()) * dtype_size(dtype_); }
  // The backend whose memory holds the bytes ("cpu", or "cuda" for a CUDA program's outputs). A
  // compiled program takes arguments of its own backend only (INVALID_ARGUMENT otherwise).
  std::string_view backend() const;
  // A copy of this array (same type and memory kind) on the named backend (UNIMPLEMENTED where this
  // build or machine lacks it).
  Array to_backend(std::string_view backend) const;
  // The bytes where they live: host memory on the "cpu" backend, but a device address for a "cuda"
  // array of kind device. to_vector(), to_string() and equals() read any backend's arrays.
  const void* data() const;
  void* mutable_data();
  // The buffer itself (shared by copies of this Array), for the runtime.
  const std::shared_ptr<detail::Storage>& storage() const { return storage_; }

  // The elements, row-major. T must store the array's dtype exactly; f16 and bf16 arrays may also
  // be read as float. Anything else is INVALID_ARGUMENT.
  template <class T> std::vector<T> to_vector() const {
    if (!host_readable()) return host_copy().template to_vector<T>();
    if constexpr (std::is_same_v<T, bool>) {
      check_read(DType::boolean);
      auto* p = static_cast<const unsigned char*>(data());
      return std::vector<bool>(p, p + size());
    } else {
      if (std::is_same_v<T, float> && (dtype_ == DType::f16 || dtype_ == DType::bf16))
        return as_floats_impl<T>();
      check_read(dtype_of<T>());
      auto* p = static_cast<const T*>(data());
      return std::vector<T>(p, p + size());
    }
  }
  // "f32[2,2]{device} [[1, 2], [3, 4]]"; arrays of more than max_elements are elided in the middle
  // ("[1, 2, ..., 9]", "[...]" when max_elements is 0).
  std::string to_string(int64_t max_elements = 64) const;

  // Same bytes and type. A donated array (either one) is INVALID_ARGUMENT: it has no bytes to compare.
  bool equals(const Array& other) const;

 private:
  void check_read(DType requested) const;
  // Whether the host can read data() directly; host_copy() is this array, or a CPU copy of it.
  bool host_readable() const;
  Array host_copy() const;
  void check_not_donated(std::string_view what) const;
  std::vector<float> half_to_floats() const;
  template <class T> std::vector<T> as_floats_impl() const {
    if constexpr (std::is_same_v<T, float>) return half_to_floats();
    else return {};
  }

  std::shared_ptr<detail::Storage> storage_;
  DType dtype_ = DType::f32;
  Shape shape_;
  MemoryKind kind_ = MemoryKind::device;
};

// Bytes of array data ferry holds now in `kind`: every live Array's buffer and the arenas of runs in
// progress (each memory kind's resource counts what it hands out and gets back).
int64_t bytes_in_use(MemoryKind kind);

// Every element `value`. An i32 value must be a whole number in its range and a bool 0 or 1, as for
// the traced constant (INVALID_ARGUMENT otherwise: NaN or 2.5 has no i32 or bool to become).
Array full(const Shape& shape, double value, DType dtype = DType::f32, MemoryKind kind = MemoryKind::device);
Array ones(const Shape& shape, DType dtype = DType::f32, MemoryKind kind = MemoryKind::device);
Array zeros(const Shape& shape, DType dtype = DType::f32, MemoryKind kind = MemoryKind::device);

}  // namespace ferry
