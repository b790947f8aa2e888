// The safetensors header: parsed and checked against the size of the data that follows it before
// anything is allocated for the tensors, so that a malformed or hostile file is an error, never a
// huge allocation or a read past the end.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/safetensors.h"

namespace ferry::io {

// Headers longer than this are refused (the reference implementation's limit).
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range within the data that follows the header
};

struct Header {
  std::vector<TensorEntry> tensors;  // by name
  Metadata metadata;
};

// The header length from the file's first 8 bytes, checked against the file's size (INVALID_ARGUMENT
// for a file shorter than 8 bytes, a length over kMaxHeaderBytes, or one past the end of the file).
uint64_t header_length(std::string_view first_bytes, uint64_t file_bytes);

// Parses the JSON header and checks it: every tensor has a known dtype, a shape of non-negative
// integers and a byte range of exactly its size; the ranges tile [0, data_bytes) with no gap,
// overlap or excess. INVALID_ARGUMENT says which tensor and what is wrong; a dtype ferry lacks is
// UNIMPLEMENTED.
Header parse_header(std::string_view json, uint64_t data_bytes);

// The safetensors name of a dtype ("F32", "BOOL", ...).
std::string_view safetensors_dtype(DType dtype);

}  // namespace ferry::io
