// Arrays on disk in the safetensors format (https://github.com/huggingface/safetensors), which the
// PyTorch, JAX and Hugging Face ecosystems read and write:
//
//   ferry::save("model.safetensors", {{"w", w}, {"b", b}});
//   ferry::NamedArrays loaded = ferry::load("model.safetensors");   // loaded.at("w")
//
// A file is an 8-byte little-endian header length N, N bytes of JSON naming each tensor's dtype,
// shape and byte range ({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...},
// with an optional "__metadata__" object of strings), then the tensors' bytes, row-major and
// little-endian. ferry reads and writes the dtypes it has: BOOL, BF16, F16, F32, F64, I32.
//
// A file is untrusted input: a truncated, oversized or malformed file (a header longer than the
// file or than 100 MB, JSON that does not parse, a missing or wrong field, byte ranges that overlap,
// leave holes, disagree with the shape or run past the end, bytes after the last tensor, a bool
// that is neither 0 nor 1) is an INVALID_ARGUMENT error saying what is wrong, and nothing is
// allocated before the header has been checked against the file's size. A dtype of the format
// that ferry lacks (I64, U8, ...) is UNIMPLEMENTED.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ferry/array.h"

namespace ferry {

// Arrays by name; std::map keeps the names sorted, as the files list them.
using NamedArrays = std::map<std::string, Array>;
// The file's "__metadata__": free-form strings (e.g. {"step": "300"}).
using Metadata = std::map<std::string, std::string>;

// Writes `arrays` to `path`. The file is written beside `path` under a temporary name and renamed
// over it at the end, so an interrupted save never leaves a half-written checkpoint behind. Names
// must be non-empty and not "__metadata__"; a donated array is INVALID_ARGUMENT.
void save(const std::string& path, const NamedArrays& arrays, const Metadata& metadata = {});

// Reads every tensor of the file at `path` into new Arrays of memory kind `kind`.
NamedArrays load(const std::string& path, MemoryKind kind = MemoryKind::device);
// Only the file's "__metadata__" (empty when it has none); the tensors are checked, not read.
Metadata load_metadata(const std::string& path);

// The same in memory: the bytes of a file, and the arrays (and metadata) of a file's bytes.
std::string to_safetensors(const NamedArrays& arrays, const Metadata& metadata = {});
NamedArrays from_safetensors(std::string_view bytes, MemoryKind kind = MemoryKind::device, Metadata* metadata = nullptr);

}  // namespace ferry
