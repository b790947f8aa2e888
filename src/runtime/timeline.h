// Timeline: what a run did and when, written as a Chrome/Perfetto trace (JSON "traceEvents"): a
// compute lane (one slice per equation), a copy lane (one slice per copy) and counters of the live
// bytes of each memory kind. Open it in ui.perfetto.dev or chrome://tracing.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/types.h"

namespace ferry::runtime {

class Timeline {
 public:
  Timeline();
  // Times are steady-clock seconds; they are written relative to the timeline's creation.
  void compute(std::string name, double begin, double end);
  void copy(std::string name, int64_t bytes, double begin, double end);  // from the copy thread
  // An exchange with the other processes, from its start to the done that found it complete.
  void collective(std::string name, int64_t bytes, double begin, double end);
  void live_bytes(MemoryKind kind, int64_t bytes, double at);
  std::string to_json() const;

 private:
  struct Slice {
    std::string name;
    int lane;  // 0 compute, 1 copies, 2 collectives
    double begin, end;
    int64_t bytes;
  };
  struct Sample {
    MemoryKind kind;
    int64_t bytes;
    double at;
  };
  double origin_;
  mutable std::mutex mu_;
  std::vector<Slice> slices_;
  std::vector<Sample> samples_;
};

}  // namespace ferry::runtime
