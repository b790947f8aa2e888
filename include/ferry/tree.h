// Structures of tensors (a Tensor, a std::vector<Tensor>, and pairs/tuples of those) flattened to a
// list of leaves and rebuilt from one. Transformations work on the flat lists; users see their own
// structures. Undefined tensors stay as leaves (they mean "absent").
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/error.h"
#include "ferry/tensor.h"

namespace ferry::detail {

inline void flatten(const Tensor& t, std::vector<Tensor>& out) { out.push_back(t); }
inline void flatten(const std::vector<Tensor>& ts, std::vector<Tensor>& out) { out.insert(out.end(), ts.begin(), ts.end()); }
template <class A, class B> void flatten(const std::pair<A, B>& p, std::vector<Tensor>& out);
template <class... Ts> void flatten(const std::tuple<Ts...>& t, std::vector<Tensor>& out);
template <class A, class B> void flatten(const std::pair<A, B>& p, std::vector<Tensor>& out) {
  flatten(p.first, out);
  flatten(p.second, out);
}
template <class... Ts> void flatten(const std::tuple<Ts...>& t, std::vector<Tensor>& out) {
  std::apply([&](const auto&... e) { (flatten(e, out), ...); }, t);
}
template <class T> std::vector<Tensor> flat(const T& tree) {
  std::vector<Tensor> out;
  flatten(tree, out);
  return out;
}

// Rebuilds a structure shaped like `like` from leaves[pos...], advancing pos.
inline Tensor unflatten(const Tensor&, const std::vector<Tensor>& leaves, size_t& pos) {
  if (pos >= leaves.size()) throw Error(ErrorCode::internal, "unflatten: too few leaves");
  return leaves[pos++];
}
inline std::vector<Tensor> unflatten(const std::vector<Tensor>& like, const std::vector<Tensor>& leaves, size_t& pos) {
  if (pos + like.size() > leaves.size()) throw Error(ErrorCode::internal, "unflatten: too few leaves");
  std::vector<Tensor> out(leaves.begin() + static_cast<std::ptrdiff_t>(pos),
                          leaves.begin() + static_cast<std::ptrdiff_t>(pos + like.size()));
  pos += like.size();
  return out;
}
template <class A, class B> std::pair<A, B> unflatten(const std::pair<A, B>& like, const std::vector<Tensor>& leaves, size_t& pos);
template <class... Ts> std::tuple<Ts...> unflatten(const std::tuple<Ts...>& like, const std::vector<Tensor>& leaves, size_t& pos);
template <class A, class B> std::pair<A, B> unflatten(const std::pair<A, B>& like, const std::vector<Tensor>& leaves, size_t& pos) {
  A a = unflatten(like.first, leaves, pos);
  B b = unflatten(like.second, leaves, pos);
  return {std::move(a), std::move(b)};
}
template <class... Ts> std::tuple<Ts...> unflatten(const std::tuple<Ts...>& like, const std::vector<Tensor>& leaves, size_t& pos) {
  return std::apply([&](const auto&... e) { return std::tuple<Ts...>{unflatten(e, leaves, pos)...}; }, like);
}
template <class T> T unflatten_all(const T& like, const std::vector<Tensor>& leaves) {
  size_t pos = 0;
  T out = unflatten(like, leaves, pos);
  if (pos != leaves.size()) throw Error(ErrorCode::internal, "unflatten: too many leaves");
  return out;
}

}  // namespace ferry::detail
