// libFuzzer target: ferry::from_safetensors on arbitrary bytes returns arrays or throws
// ferry::Error (never INTERNAL); what loads saves to bytes that load back to the same arrays.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "ferry/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ferry::NamedArrays arrays;
  ferry::Metadata metadata;
  try {
    arrays = ferry::from_safetensors(std::string_view(reinterpret_cast<const char*>(data), size),
                                     ferry::MemoryKind::device, &metadata);
  } catch (const ferry::Error& e) {
    if (e.code() == ferry::ErrorCode::internal) throw std::logic_error(e.what());
    return 0;
  }
  ferry::NamedArrays again = ferry::from_safetensors(ferry::to_safetensors(arrays, metadata));
  if (again.size() != arrays.size()) throw std::logic_error("a loaded file does not round-trip");
  for (const auto& [name, a] : arrays)
    if (!again.at(name).equals(a)) throw std::logic_error("tensor '" + name + "' does not round-trip");
  return 0;
}
