// Arenas: the plan's checks on a run's arenas (one block per memory kind, exactly the planned size,
// which the executable allocates from its backend's memory resources): every buffer taken must lie
// inside its arena and overlap no buffer still live (INTERNAL otherwise).
//
// Liveness is enforced, not assumed: a byte outside every live buffer is poisoned for
// AddressSanitizer (ASAN_POISON_MEMORY_REGION) in sanitizer builds, so a kernel touching a buffer
// before it is taken or after it is released is an ASan report; in checked mode it also holds the
// poison pattern (0xFF bytes: NaN in every float dtype), so reading it changes results. The fills
// are the backend's (on its compute stream); ASan poisoning applies to host-accessible kinds only.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "ferry/types.h"
#include "runtime/backend.h"
#include "runtime/memory_resource.h"
#include "runtime/timeline.h"

namespace ferry::runtime {

inline constexpr unsigned char kPoisonByte = 0xFF;

class Arenas {
 public:
  // `max_live`: the most buffers live at once. The tracker reserves room for them here, so taking
  // and releasing buffers during a run never allocates.
  explicit Arenas(size_t max_live);
  ~Arenas() { close(); }
  Arenas(const Arenas&) = delete;
  Arenas& operator=(const Arenas&) = delete;

  // Starts checking the arenas at `bases` (sizes[k] bytes of kind k, from `backend`), every byte
  // poisoned (and, when `checked`, filled with the poison pattern).
  void open(const std::array<char*, kNumKinds>& bases, const std::array<int64_t, kNumKinds>& sizes, Backend& backend,
            bool checked);
  // Stops (nothing when none are open); the bytes are the caller's to give back.
  void close();

  char* base(MemoryKind k) const { return base_[static_cast<size_t>(k)]; }
  int64_t size(MemoryKind k) const { return size_[static_cast<size_t>(k)]; }

  // [offset, offset + bytes) of kind k becomes live (usable) / free (poisoned again).
  void acquire(MemoryKind k, int64_t offset, int64_t bytes);
  void release(MemoryKind k, int64_t offset, int64_t bytes);
  // Live bytes are reported to `timeline` (may be null) on every change.
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }

 private:
  std::array<char*, kNumKinds> base_{};
  std::array<int64_t, kNumKinds> size_{};
  Backend* backend_ = nullptr;
  std::array<bool, kNumKinds> host_{};  // ASan may poison it
  bool open_ = false, checked_ = false;
  std::array<std::vector<std::pair<int64_t, int64_t>>, kNumKinds> live_;  // [offset, end), sorted
  std::array<int64_t, kNumKinds> live_bytes_{};
  Timeline* timeline_ = nullptr;
};

}  // namespace ferry::runtime
