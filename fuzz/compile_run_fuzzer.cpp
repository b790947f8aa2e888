// libFuzzer target: parse, lower, compile (under a device limit) and run parsed programs on small
// inputs. Programs over a few MB, or whose scans would run too long, are parsed only.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ferry::fuzz::parse_compile_run(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const ferry::Error&) {
  }
  return 0;
}
