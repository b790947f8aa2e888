// The host half of ferry/sharding.h: this process's shard of an Array.
#include <algorithm>
#include <cstring>

#include "ferry/distributed.h"
#include "ferry/sharding.h"

namespace ferry::optim {

Array shard(const Array& x) {
  const int64_t n = distributed::process_count(), r = distributed::process_index();
  const int64_t piece = shard_size(x.size(), n);
  const size_t width = dtype_size(x.dtype());
  std::vector<char> bytes(static_cast<size_t>(piece) * width, 0);  // padding is zero
  const int64_t first = r * piece, last = std::min(x.size(), first + piece);
  const Array host = x.backend() == "cpu" ? x : x.to_backend("cpu");
  if (last > first)
    std::memcpy(bytes.data(), static_cast<const char*>(host.data()) + first * static_cast<int64_t>(width),
                static_cast<size_t>(last - first) * width);
  return Array::from_bytes(bytes.data(), bytes.size(), x.dtype(), {piece}, x.memory_kind());
}

}  // namespace ferry::optim
