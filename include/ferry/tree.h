// Trees: structures of leaves that transformations and compiled programs take and return, as JAX's
// pytrees. A tree is a leaf (a Tensor inside a trace; an Array or a ShapeDtype outside), or a
// std::vector, a std::map<std::string, ...>, a std::pair or std::tuple of trees, or a struct of
// trees registered with FERRY_FIELDS:
//
//   template <class T> struct Mlp {
//     T w1, b1;
//     std::vector<T> layers;
//     FERRY_FIELDS(w1, b1, layers)
//   };
//
// A struct written as a template over its leaf type serves on both sides of jit: Mlp<Tensor> inside
// the traced function, Mlp<Array> for the data, Mlp<ShapeDtype> to lower without data. (A struct
// that is not a template works too, with the one leaf type it holds.) Leaves are visited depth
// first: vector elements in order, map entries by key, struct fields in FERRY_FIELDS order.
// Transformations work on the flat list of leaves; users see their own structures. Undefined
// tensors stay as leaves (they mean "absent").
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/array.h"
#include "ferry/error.h"
#include "ferry/tensor.h"

// Registers a struct's fields as a tree, in this order; put it inside the struct. Field names are
// kept for structure checks, error messages and the names of saved arrays ("w1", "layers.0").
#define FERRY_FIELDS(...)                                                            \
  auto ferry_fields() { return std::tie(__VA_ARGS__); }                              \
  auto ferry_fields() const { return std::tie(__VA_ARGS__); }                        \
  static constexpr std::string_view ferry_field_names() { return #__VA_ARGS__; }

namespace ferry {

struct ShapeDtype;  // jit.h

namespace detail {

template <class T> struct is_leaf : std::false_type {};
template <> struct is_leaf<Tensor> : std::true_type {};
template <> struct is_leaf<Array> : std::true_type {};
template <> struct is_leaf<ShapeDtype> : std::true_type {};
template <class T> inline constexpr bool is_leaf_v = is_leaf<T>::value;

template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_map : std::false_type {};
template <class V, class C, class A> struct is_map<std::map<std::string, V, C, A>> : std::true_type {};
template <class T> struct is_tuple_like : std::false_type {};
template <class A, class B> struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class... Ts> struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};
template <class T> concept Record = requires(const T& t) {
  t.ferry_fields();
  T::ferry_field_names();
};

template <class> inline constexpr bool always_false = false;

// The field names of FERRY_FIELDS(a, b, c): "a", "b", "c".
std::vector<std::string> split_field_names(std::string_view names);
template <Record T> const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names = split_field_names(T::ferry_field_names());
  return names;
}

// Calls fn(leaf) for each leaf of the tree, in order.
template <class T, class F> void for_each_leaf(const T& tree, F&& fn) {
  if constexpr (is_leaf_v<T>) {
    fn(tree);
  } else if constexpr (is_vector<T>::value) {
    for (const auto& e : tree) for_each_leaf(e, fn);
  } else if constexpr (is_map<T>::value) {
    for (const auto& kv : tree) for_each_leaf(kv.second, fn);
  } else if constexpr (is_tuple_like<T>::value) {
    std::apply([&](const auto&... e) { (for_each_leaf(e, fn), ...); }, tree);
  } else if constexpr (Record<T>) {
    std::apply([&](const auto&... e) { (for_each_leaf(e, fn), ...); }, tree.ferry_fields());
  } else {
    static_assert(always_false<T>, "ferry: not a tree: leaves are Tensor, Array or ShapeDtype, containers are "
                                   "std::vector, std::map<std::string, ...>, std::pair, std::tuple and structs "
                                   "registered with FERRY_FIELDS");
  }
}

// The element type of a vector or map.
template <class T> struct element_of {
  using type = typename T::value_type::second_type;
};
template <class T, class A> struct element_of<std::vector<T, A>> {
  using type = T;
};
// The leaf type of a tree type (Tensor for trees of tensors); Tensor where the type does not say.
template <class T> auto leaf_type_of() {
  if constexpr (is_leaf_v<T>) return std::type_identity<T>{};
  else if constexpr (is_vector<T>::value || is_map<T>::value) return leaf_type_of<std::decay_t<typename element_of<T>::type>>();
  else if constexpr (is_tuple_like<T>::value) {
    if constexpr (std::tuple_size_v<T> == 0) return std::type_identity<Tensor>{};
    else return leaf_type_of<std::decay_t<std::tuple_element_t<0, T>>>();
  } else if constexpr (Record<T>) {
    using Fields = decltype(std::declval<const T&>().ferry_fields());
    if constexpr (std::tuple_size_v<Fields> == 0) return std::type_identity<Tensor>{};
    else return leaf_type_of<std::decay_t<std::tuple_element_t<0, Fields>>>();
  } else return std::type_identity<void>{};
}
template <class T> using leaf_t = typename decltype(leaf_type_of<std::decay_t<T>>())::type;
// A tree whose leaves are L (type-level: an empty vector of Arrays counts).
template <class T, class L> inline constexpr bool is_tree_of = std::is_same_v<leaf_t<T>, L>;

// The same structure with leaves of type L: Mlp<Tensor> -> Mlp<Array>, std::map<std::string, Array>
// -> std::map<std::string, Tensor>, ... A struct that is not a template keeps its type, so only
// rebinds to the leaf type it has (void otherwise).
template <class T, class L> auto rebind_type();
template <class T, class L> using rebind_t = typename decltype(rebind_type<std::decay_t<T>, L>())::type;
template <class T, class L> struct rebind_record {
  using type = std::conditional_t<std::is_same_v<leaf_t<T>, L>, T, void>;
};
template <template <class> class S, class X, class L> struct rebind_record<S<X>, L> {
  using type = S<rebind_t<X, L>>;
};
template <class Tuple, class L> struct rebind_tuple;
template <class... Ts, class L> struct rebind_tuple<std::tuple<Ts...>, L> {
  using type = std::tuple<rebind_t<Ts, L>...>;
};
template <class A, class B, class L> struct rebind_tuple<std::pair<A, B>, L> {
  using type = std::pair<rebind_t<A, L>, rebind_t<B, L>>;
};
template <class T, class L> auto rebind_type() {
  if constexpr (is_leaf_v<T>) return std::type_identity<L>{};
  else if constexpr (is_vector<T>::value) return std::type_identity<std::vector<rebind_t<typename element_of<T>::type, L>>>{};
  else if constexpr (is_map<T>::value)
    return std::type_identity<std::map<std::string, rebind_t<typename element_of<T>::type, L>>>{};
  else if constexpr (is_tuple_like<T>::value) return std::type_identity<typename rebind_tuple<T, L>::type>{};
  else if constexpr (Record<T>) return std::type_identity<typename rebind_record<T, L>::type>{};
  else return std::type_identity<void>{};
}

// The tree with each leaf replaced by fn(leaf), of type rebind_t<T, L>.
template <class L, class T, class F> rebind_t<T, L> map_leaves(const T& tree, F&& fn) {
  using R = rebind_t<T, L>;
  static_assert(!std::is_void_v<R>, "ferry: this struct cannot hold other leaves; write it as a template over its "
                                    "leaf type (template <class T> struct S { T w; FERRY_FIELDS(w) };)");
  if constexpr (is_leaf_v<T>) {
    return fn(tree);
  } else if constexpr (is_vector<T>::value) {
    R out;
    out.reserve(tree.size());
    for (const auto& e : tree) out.push_back(map_leaves<L>(e, fn));
    return out;
  } else if constexpr (is_map<T>::value) {
    R out;
    for (const auto& kv : tree) out.emplace(kv.first, map_leaves<L>(kv.second, fn));
    return out;
  } else if constexpr (is_tuple_like<T>::value) {
    // Braces evaluate left to right, so leaves are visited in order.
    return std::apply([&](const auto&... e) { return R{map_leaves<L>(e, fn)...}; }, tree);
  } else {
    R out{};
    auto dst = out.ferry_fields();
    auto src = tree.ferry_fields();
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((std::get<I>(dst) = map_leaves<L>(std::get<I>(src), fn)), ...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(src)>>{});
    return out;
  }
}

template <class T> size_t leaf_count(const T& tree) {
  size_t n = 0;
  for_each_leaf(tree, [&](const auto&) { ++n; });
  return n;
}

// Appends the tree's leaves to out.
template <class T, class L> void flatten(const T& tree, std::vector<L>& out) {
  for_each_leaf(tree, [&](const auto& leaf) {
    if constexpr (std::is_same_v<std::decay_t<decltype(leaf)>, L>) out.push_back(leaf);
    else static_assert(always_false<decltype(leaf)>, "ferry: a tree's leaves are not of the list's type");
  });
}
template <class T> std::vector<leaf_t<T>> flat(const T& tree) {
  std::vector<leaf_t<T>> out;
  flatten(tree, out);
  return out;
}

// Rebuilds a structure shaped like `like` from leaves[pos...], advancing pos.
template <class T, class L> T unflatten(const T& like, const std::vector<L>& leaves, size_t& pos) {
  return map_leaves<L>(like, [&](const auto&) -> L {
    if (pos >= leaves.size()) throw Error(ErrorCode::internal, "unflatten: too few leaves");
    return leaves[pos++];
  });
}
template <class T, class L> T unflatten_all(const T& like, const std::vector<L>& leaves) {
  size_t pos = 0;
  T out = unflatten(like, leaves, pos);
  if (pos != leaves.size()) throw Error(ErrorCode::internal, "unflatten: too many leaves");
  return out;
}

// A tree's structure at run time, without its leaves: what jit records of a function's arguments and
// results, so that compiled programs can check the structures they are called with and rebuild the
// ones they return.
struct TreeDef {
  enum class Kind : uint8_t { leaf, list, map, tuple, record };
  Kind kind = Kind::leaf;
  std::vector<std::string> keys;  // map keys, record field names
  std::vector<TreeDef> children;
  bool operator==(const TreeDef&) const = default;
  size_t leaves() const;
  // "{w1: *, layers: [*, *]}" (* a leaf), for messages.
  std::string to_string() const;
  // The dotted path of each leaf, in order: "w1", "layers.0", "1.mu.w" (tuple positions as numbers).
  std::vector<std::string> leaf_paths() const;
};

template <class T> TreeDef tree_def(const T& tree) {
  TreeDef d;
  if constexpr (is_leaf_v<T>) {
  } else if constexpr (is_vector<T>::value) {
    d.kind = TreeDef::Kind::list;
    for (const auto& e : tree) d.children.push_back(tree_def(e));
  } else if constexpr (is_map<T>::value) {
    d.kind = TreeDef::Kind::map;
    for (const auto& kv : tree) {
      d.keys.push_back(kv.first);
      d.children.push_back(tree_def(kv.second));
    }
  } else if constexpr (is_tuple_like<T>::value) {
    d.kind = TreeDef::Kind::tuple;
    std::apply([&](const auto&... e) { (d.children.push_back(tree_def(e)), ...); }, tree);
  } else if constexpr (Record<T>) {
    d.kind = TreeDef::Kind::record;
    d.keys = field_names<T>();
    std::apply([&](const auto&... e) { (d.children.push_back(tree_def(e)), ...); }, tree.ferry_fields());
  } else {
    static_assert(always_false<T>, "ferry: not a tree");
  }
  return d;
}

// INVALID_ARGUMENT: `what` (e.g. "the compiled function's results") has structure `have`, which type T
// (at `path`) cannot hold.
[[noreturn]] void structure_mismatch(const std::string& what, const std::string& path, const TreeDef& have,
                                     const std::string& wanted);

// Builds a T from a structure and its leaves (leaves[pos...], advancing pos): vector lengths and map
// keys come from `def`, the shape of everything else from T, which must agree with def.
template <class T, class L> T build(const TreeDef& def, const std::vector<L>& leaves, size_t& pos, const std::string& what,
                                    const std::string& path = "") {
  auto sub = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if constexpr (is_leaf_v<T>) {
    static_assert(std::is_same_v<T, L>, "ferry: build: the leaves are of another type than the tree's");
    if (def.kind != TreeDef::Kind::leaf) structure_mismatch(what, path, def, "a single array");
    if (pos >= leaves.size()) throw Error(ErrorCode::internal, "build: too few leaves");
    return leaves[pos++];
  } else if constexpr (is_vector<T>::value) {
    if (def.kind != TreeDef::Kind::list) structure_mismatch(what, path, def, "a std::vector");
    T out;
    for (size_t i = 0; i < def.children.size(); ++i)
      out.push_back(build<typename element_of<T>::type>(def.children[i], leaves, pos, what, sub(std::to_string(i))));
    return out;
  } else if constexpr (is_map<T>::value) {
    if (def.kind != TreeDef::Kind::map) structure_mismatch(what, path, def, "a std::map");
    T out;
    for (size_t i = 0; i < def.children.size(); ++i)
      out.emplace(def.keys[i], build<typename element_of<T>::type>(def.children[i], leaves, pos, what, sub(def.keys[i])));
    return out;
  } else if constexpr (is_tuple_like<T>::value) {
    constexpr size_t n = std::tuple_size_v<T>;
    if (def.kind != TreeDef::Kind::tuple || def.children.size() != n)
      structure_mismatch(what, path, def, "a tuple of " + std::to_string(n));
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return T{build<std::tuple_element_t<I, T>>(def.children[I], leaves, pos, what, sub(std::to_string(I)))...};
    }(std::make_index_sequence<n>{});
  } else if constexpr (Record<T>) {
    if (def.kind != TreeDef::Kind::record || def.keys != field_names<T>())
      structure_mismatch(what, path, def, "a struct with fields " + std::string(T::ferry_field_names()));
    T out{};
    auto fields = out.ferry_fields();
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((std::get<I>(fields) = build<std::decay_t<std::tuple_element_t<I, decltype(fields)>>>(
            def.children[I], leaves, pos, what, sub(def.keys[I]))),
       ...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(fields)>>{});
    return out;
  } else {
    static_assert(always_false<T>, "ferry: not a tree");
  }
}

}  // namespace detail
}  // namespace ferry
