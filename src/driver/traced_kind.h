// The memory kind an array stands for when jit traces a call and keys its cache: carried state a
// plan keeps in host memory between calls (compiler/offload_state.h) stands for the kind the step
// that returned it was traced with, so passing it back (or to another jitted function) traces and
// finds the program as for that kind; the call moves it where its plan keeps it.
#pragma once

#include "ferry/array.h"
#include "runtime/storage.h"

namespace ferry::driver {

inline MemoryKind traced_kind(const Array& a) {
  return a.storage() && a.storage()->traced_kind ? *a.storage()->traced_kind : a.memory_kind();
}

}  // namespace ferry::driver
