// Private to the CPU kernels: per-dimension bookkeeping (strides, index counters, merged
// dimensions) on the stack. Values have at most ir::kMaxRank dimensions, so a fixed capacity of
// a few times that holds any of it and a kernel call never allocates for it.
#pragma once

#include <array>
#include <cstddef>
#include <span>

#include "ferry/error.h"
#include "ir/type.h"

namespace ferry::runtime::cpu {

template <class T, size_t N = static_cast<size_t>(ir::kMaxRank) * 2> class DimVec {
 public:
  DimVec() = default;
  explicit DimVec(size_t n, T fill = T{}) {
    check(n);
    n_ = n;
    for (size_t i = 0; i < n; ++i) v_[i] = fill;
  }
  template <class R> static DimVec from(const R& range) {
    DimVec out;
    for (const auto& x : range) out.push_back(x);
    return out;
  }

  void push_back(const T& x) {
    check(n_ + 1);
    v_[n_++] = x;
  }
  void pop_back() { --n_; }
  void clear() { n_ = 0; }
  T& back() { return v_[n_ - 1]; }
  const T& back() const { return v_[n_ - 1]; }
  T& operator[](size_t i) { return v_[i]; }
  const T& operator[](size_t i) const { return v_[i]; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T* begin() { return v_.data(); }
  T* end() { return v_.data() + n_; }
  const T* begin() const { return v_.data(); }
  const T* end() const { return v_.data() + n_; }
  T* data() { return v_.data(); }
  const T* data() const { return v_.data(); }
  operator std::span<T>() { return {v_.data(), n_}; }
  operator std::span<const T>() const { return {v_.data(), n_}; }
  // Removes the element at `it`, keeping the order of the rest.
  void erase(T* it) {
    for (T* p = it; p + 1 < end(); ++p) *p = *(p + 1);
    --n_;
  }
  bool operator==(const DimVec& o) const {
    if (n_ != o.n_) return false;
    for (size_t i = 0; i < n_; ++i)
      if (!(v_[i] == o.v_[i])) return false;
    return true;
  }

 private:
  static void check(size_t n) {
    if (n > N) throw Error(ErrorCode::internal, "CPU kernel: more dimensions than ferry's limit");
  }
  std::array<T, N> v_{};
  size_t n_ = 0;
};

using Dims64 = DimVec<int64_t>;

}  // namespace ferry::runtime::cpu
