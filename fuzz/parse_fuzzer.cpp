// libFuzzer target: ferry::parse_program on arbitrary bytes returns or throws ferry::Error; what
// parses prints text that parses back to the same text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ferry::fuzz::parse_checked(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const ferry::Error&) {
  }
  return 0;
}
