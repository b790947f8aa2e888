// The jit cache: compiled programs by argument signature, least recently used evicted first.
#include "ferry/jit_cache.h"

#include <atomic>
#include <list>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "ferry/jit.h"
#include "driver/jit_counters.h"
#include "driver/traced_kind.h"

namespace ferry {

namespace detail {
namespace {
std::atomic<int64_t> traces{0}, compiles{0};
}  // namespace

void count_trace() { traces.fetch_add(1, std::memory_order_relaxed); }
void count_compile() { compiles.fetch_add(1, std::memory_order_relaxed); }

struct JitCache::State {
  mutable std::mutex mutex;
  size_t capacity;
  // Most recently used first; the map points into the list.
  std::list<std::pair<std::string, Compiled>> order;
  std::unordered_map<std::string, std::list<std::pair<std::string, Compiled>>::iterator> by_signature;
  JitCacheInfo stats;
};

JitCache::JitCache(size_t capacity) : state_(std::make_unique<State>()) {
  if (capacity == 0) throw Error(ErrorCode::invalid_argument, "JitOptions.cache_capacity must be at least 1");
  state_->capacity = capacity;
}

JitCache::~JitCache() = default;

Compiled JitCache::get(const std::string& signature, const std::function<Compiled()>& compile) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->by_signature.find(signature);
    if (it != state_->by_signature.end()) {
      state_->order.splice(state_->order.begin(), state_->order, it->second);
      ++state_->stats.hits;
      return it->second->second;
    }
    ++state_->stats.misses;
  }
  Compiled compiled = compile();
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->by_signature.count(signature)) return compiled;
  state_->order.emplace_front(signature, compiled);
  state_->by_signature[signature] = state_->order.begin();
  while (state_->order.size() > state_->capacity) {
    state_->by_signature.erase(state_->order.back().first);
    state_->order.pop_back();
    ++state_->stats.evictions;
  }
  return compiled;
}

JitCacheInfo JitCache::info() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  JitCacheInfo i = state_->stats;
  i.size = state_->order.size();
  i.capacity = state_->capacity;
  return i;
}

void JitCache::clear() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->by_signature.clear();
  state_->order.clear();
}

void append_leaf_signature(std::string& out, const Array& a) {
  if (!a.defined()) {
    out += "-;";
    return;
  }
  out += static_cast<char>('0' + static_cast<int>(a.dtype()));
  out += static_cast<char>('0' + static_cast<int>(driver::traced_kind(a)));
  for (int64_t d : a.shape()) out += fmt::format("{},", d);
  out += ';';
}

}  // namespace detail

JitCounters jit_counters() { return {detail::traces.load(), detail::compiles.load()}; }

}  // namespace ferry
