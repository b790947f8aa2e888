// Arrays on disk in the safetensors format (https://github.com/huggingface/safetensors), which the
// PyTorch, JAX and Hugging Face ecosystems read and write:
//
//   ferry::save("model.safetensors", {{"w", w}, {"b", b}});
//   ferry::NamedArrays loaded = ferry::load("model.safetensors");   // loaded.at("w")
//
// Trees of Arrays (ferry/tree.h) save with each array named by its path in the tree, and load back
// into the structure of a tree like it:
//
//   ferry::save("ckpt.safetensors", Checkpoint<fy::Array>{params, opt_state});  // "params.w1", "opt.mu.w1", ...
//   auto restored = ferry::load("ckpt.safetensors", like);                     // checked against like
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
#include "ferry/tree.h"

namespace ferry {

// Arrays by name; std::map keeps the names sorted, as the files list them.
using NamedArrays = std::map<std::string, Array>;
// The file's "__metadata__": free-form strings (e.g. {"step": "300"}).
using Metadata = std::map<std::string, std::string>;

// Writes `arrays` to `path`. The file is written beside `path` under a temporary name of its own
// (one per call, so concurrent saves to one path do not collide), synced to disk and renamed over
// `path` at the end: a reader, an interrupted save or a power loss sees the old checkpoint or the
// new one, never a part of either. Names must be non-empty and not "__metadata__"; a donated array
// is INVALID_ARGUMENT naming it.
void save(const std::string& path, const NamedArrays& arrays, const Metadata& metadata = {});
// INVALID_ARGUMENT unless save(path, ...) could write now: the folder exists and takes a new file,
// and `path` is not a folder. Check before a long run whose result is to be saved.
void check_save_path(const std::string& path);

// Reads every tensor of the file at `path` into new Arrays of memory kind `kind`.
NamedArrays load(const std::string& path, MemoryKind kind = MemoryKind::device);
// Only the file's "__metadata__" (empty when it has none); the tensors are checked, not read.
Metadata load_metadata(const std::string& path);

// The same in memory: the bytes of a file, and the arrays (and metadata) of a file's bytes.
std::string to_safetensors(const NamedArrays& arrays, const Metadata& metadata = {});
NamedArrays from_safetensors(std::string_view bytes, MemoryKind kind = MemoryKind::device, Metadata* metadata = nullptr);

namespace detail {
[[noreturn]] void missing_array(const std::string& name);
void check_loaded(const std::string& name, const Array& loaded, const Array& like);
}  // namespace detail

// The arrays of a tree by their paths ("w1", "layers.0", "mu.w1"), each prefixed with `prefix`.
template <class T>
  requires detail::is_tree_of<T, Array>
NamedArrays to_named(const T& tree, const std::string& prefix = "") {
  NamedArrays out;
  std::vector<std::string> paths = detail::tree_def(tree).leaf_paths();
  size_t i = 0;
  detail::for_each_leaf(tree, [&](const Array& a) { out.emplace(prefix + paths[i++], a); });
  return out;
}

// A tree shaped like `like` from the arrays named by its paths (with `prefix`): a missing name, or an
// array whose dtype or shape differs from like's, is INVALID_ARGUMENT naming it. Other arrays are
// ignored, so parameters load from a checkpoint that also holds an optimizer's state.
template <class T>
  requires detail::is_tree_of<T, Array>
T from_named(const NamedArrays& arrays, const T& like, const std::string& prefix = "") {
  std::vector<std::string> paths = detail::tree_def(like).leaf_paths();
  size_t i = 0;
  return detail::map_leaves<Array>(like, [&](const Array& leaf) {
    const std::string name = prefix + paths[i++];
    auto it = arrays.find(name);
    if (it == arrays.end()) detail::missing_array(name);
    detail::check_loaded(name, it->second, leaf);
    return it->second;
  });
}

// save(path, to_named(tree)) and from_named(load(path), like).
template <class T>
  requires detail::is_tree_of<T, Array>
void save(const std::string& path, const T& tree, const Metadata& metadata = {}) {
  save(path, to_named(tree), metadata);
}
template <class T>
  requires detail::is_tree_of<T, Array>
T load(const std::string& path, const T& like, MemoryKind kind = MemoryKind::device) {
  return from_named(load(path, kind), like);
}

}  // namespace ferry
