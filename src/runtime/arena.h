// Arenas: one block of memory per memory kind, exactly the planned size, and a tracker that proves
// the plan while it runs: every buffer taken must lie inside its arena and overlap no buffer still
// live (INTERNAL otherwise), and the highest byte ever in use is recorded (the high-water mark).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include "ferry/types.h"
#include "runtime/timeline.h"

namespace ferry::runtime {

inline constexpr int kNumKinds = 3;

class Arenas {
 public:
  explicit Arenas(const std::array<int64_t, kNumKinds>& sizes);
  ~Arenas();
  Arenas(const Arenas&) = delete;
  Arenas& operator=(const Arenas&) = delete;

  char* base(MemoryKind k) const { return base_[static_cast<size_t>(k)]; }
  int64_t size(MemoryKind k) const { return size_[static_cast<size_t>(k)]; }

  // [offset, offset + bytes) of kind k becomes live / free.
  void acquire(MemoryKind k, int64_t offset, int64_t bytes);
  void release(MemoryKind k, int64_t offset, int64_t bytes);
  int64_t high_water(MemoryKind k) const { return high_water_[static_cast<size_t>(k)]; }
  // Live bytes are reported to `timeline` (may be null) on every change.
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }

 private:
  std::array<char*, kNumKinds> base_{};
  std::array<int64_t, kNumKinds> size_{};
  std::array<int64_t, kNumKinds> high_water_{};
  std::array<std::map<int64_t, int64_t>, kNumKinds> live_;  // offset -> end
  std::array<int64_t, kNumKinds> live_bytes_{};
  Timeline* timeline_ = nullptr;
};

}  // namespace ferry::runtime
