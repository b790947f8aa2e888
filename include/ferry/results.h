// Results: what a compiled call returns. It is the flat list of output Arrays (a
// std::vector<Array>, in the order the traced function's result flattens), and it remembers that
// result's structure, so it converts to the same structure of Arrays:
//
//   Mlp<fy::Array> params = step(params, x);                       // a struct registered with FERRY_FIELDS
//   auto [loss, params2] = step(params, x).as<fy::Array, Mlp<fy::Array>>();   // several: a std::tuple
//   fy::Array loss = step(params, x)[0];                           // the flat form
//
// Converting to a type whose structure differs from the result's (another struct, other map keys,
// a vector where the result has a tuple) is INVALID_ARGUMENT naming where they differ.
#pragma once

#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/array.h"
#include "ferry/tree.h"

namespace ferry {

class Results : public std::vector<Array> {
 public:
  Results() = default;
  Results(std::vector<Array> flat, std::shared_ptr<const detail::TreeDef> structure)
      : std::vector<Array>(std::move(flat)), structure_(std::move(structure)) {}

  // The results as T (a tree of Arrays shaped like the traced function's result); with several
  // types, as a std::tuple of them (for a function returning a tuple or pair of that many parts).
  template <class T, class... More> auto as() const {
    if constexpr (sizeof...(More) == 0) return as_one<T>();
    else return as_one<std::tuple<T, More...>>();
  }
  template <class T>
    requires(detail::is_tree_of<T, Array> && !std::is_same_v<T, std::vector<Array>>)
  operator T() const {
    return as_one<T>();
  }

  // The result's structure (null for programs parsed from text, which have none: they convert only
  // to flat forms).
  const std::shared_ptr<const detail::TreeDef>& structure() const { return structure_; }

 private:
  template <class T> T as_one() const {
    const std::vector<Array>& flat = *this;
    size_t pos = 0;
    if (structure_) return detail::build<T>(*structure_, flat, pos, "the compiled function's result");
    // No recorded structure: the outputs as a vector, a tuple, or the one Array.
    detail::TreeDef def;
    if (detail::is_vector<T>::value || flat.size() != 1) {
      def.kind = detail::is_vector<T>::value ? detail::TreeDef::Kind::list : detail::TreeDef::Kind::tuple;
      def.children.resize(flat.size());
    }
    return detail::build<T>(def, flat, pos, "the compiled program's outputs");
  }

  std::shared_ptr<const detail::TreeDef> structure_;
};

}  // namespace ferry
