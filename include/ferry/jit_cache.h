// The cache behind calling a jit-ed function on Arrays: one compiled program per argument signature
// (the argument types, the structure of each argument (vector lengths, map keys) and each leaf's
// shape, dtype and memory kind), kept in a bounded least-recently-used cache that belongs to the
// jit-ed function and its copies. The CompileOptions are the jit-ed function's own
// (JitOptions::compile), fixed for its cache.
//
//   auto step = fy::jit(train_step);
//   step(params, batch);          // traces and compiles
//   step(params, batch2);         // same signature: runs the kept program
//   step.cache_info();            // {hits 1, misses 1, ...}
//   fy::jit_counters();           // traces and compiles in this process, for tests
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>

#include "ferry/array.h"
#include "ferry/tree.h"

namespace ferry {

class Compiled;

// Like functools.lru_cache's cache_info().
struct JitCacheInfo {
  int64_t hits = 0;       // calls that reused a compiled program
  int64_t misses = 0;     // calls that traced and compiled
  int64_t evictions = 0;  // programs dropped to stay within capacity
  size_t size = 0;        // programs kept now
  size_t capacity = 0;
};

// Every trace and compile in this process since it started (jit, lower, compile, and the jit-ed
// calls that miss their cache): a test can see that a cached call did neither.
struct JitCounters {
  int64_t traces = 0;
  int64_t compiles = 0;
};
JitCounters jit_counters();

namespace detail {

class JitCache {
 public:
  explicit JitCache(size_t capacity);
  ~JitCache();
  JitCache(const JitCache&) = delete;
  JitCache& operator=(const JitCache&) = delete;

  // The compiled program kept for `signature`, or the one `compile` makes (then kept, evicting the
  // least recently used beyond capacity). Concurrent calls are safe; a miss compiles outside the
  // lock, so two threads missing at once may both compile (the first kept wins).
  Compiled get(const std::string& signature, const std::function<Compiled()>& compile);
  JitCacheInfo info() const;
  void clear();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Appends what distinguishes one call's arguments from another's for the cache.
void append_leaf_signature(std::string& out, const Array& a);
template <class T> void append_structure(std::string& out, const T& tree) {
  if constexpr (is_vector<T>::value) {
    out += '[' + std::to_string(tree.size());
    for (const auto& e : tree) append_structure(out, e);
    out += ']';
  } else if constexpr (is_map<T>::value) {
    out += '{';
    for (const auto& kv : tree) {
      out += std::to_string(kv.first.size()) + ':' + kv.first;
      append_structure(out, kv.second);
    }
    out += '}';
  } else if constexpr (is_tuple_like<T>::value) {
    std::apply([&](const auto&... e) { (append_structure(out, e), ...); }, tree);
  } else if constexpr (Record<T>) {
    std::apply([&](const auto&... e) { (append_structure(out, e), ...); }, tree.ferry_fields());
  }
}
template <class... Args> std::string call_signature(const Args&... args) {
  std::string out;
  // The argument types fix everything but vector lengths and map keys, which follow.
  ((out += std::to_string(typeid(Args).hash_code()) + ';'), ...);
  (append_structure(out, args), ...);
  out += '|';
  (for_each_leaf(args, [&](const Array& a) { append_leaf_signature(out, a); }), ...);
  return out;
}

}  // namespace detail
}  // namespace ferry
