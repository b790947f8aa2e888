// safetensors files: writing (header, then the tensors largest element first so each is aligned to
// its element size, as the reference implementation lays them out) and reading (header checked
// against the file's size first, then each tensor read straight into its Array).
#include "ferry/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "io/safetensors_header.h"
#include "ir/echo.h"
#include "ir/type.h"

namespace ferry {
namespace {

using json = nlohmann::json;

// The array's bytes where the host can read them: itself on the CPU backend, else a CPU copy.
Array on_host(const Array& a) { return a.backend() == "cpu" ? a : a.to_backend("cpu"); }

void check_bools(const Array& a, const std::string& name) {
  if (int64_t i = ir::first_non_bool(a.data(), a.size()); i >= 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("safetensors: bool tensor '{}' holds the byte {} at element {}; bools are 0 or 1", ir::echo(name),
                            static_cast<const unsigned char*>(a.data())[i], i));
}

// The header (padded with spaces to a multiple of 8 bytes) and the order the tensors' bytes follow it.
std::pair<std::string, std::vector<const NamedArrays::value_type*>> layout(const NamedArrays& arrays,
                                                                            const Metadata& metadata) {
  std::vector<const NamedArrays::value_type*> order;
  for (const auto& entry : arrays) {
    if (entry.first.empty()) throw Error(ErrorCode::invalid_argument, "save: an array has an empty name");
    if (entry.first == "__metadata__")
      throw Error(ErrorCode::invalid_argument, "save: \"__metadata__\" is reserved for the metadata, not an array name");
    if (!entry.second.defined())
      throw Error(ErrorCode::invalid_argument, fmt::format("save: array '{}' is an empty Array", entry.first));
    if (entry.second.is_deleted())  // before anything is written
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("save: array '{}' ({}) was donated to a compiled call (donate_argnums); its buffer now "
                              "belongs to that call's output, so save that output instead",
                              entry.first, type_string(entry.second.dtype(), entry.second.shape())));
    order.push_back(&entry);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return dtype_size(a->second.dtype()) > dtype_size(b->second.dtype());
  });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t at = 0;
  for (const auto* entry : order) {
    const Array& a = entry->second;
    header[entry->first] = {{"dtype", io::safetensors_dtype(a.dtype())},
                            {"shape", a.shape()},
                            {"data_offsets", {at, at + a.nbytes()}}};
    at += a.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return {std::move(text), std::move(order)};
}

std::string length_prefix(uint64_t n) {
  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out;
}

[[noreturn]] void io_error(const std::string& what, const std::string& path) {
  const int e = errno;
  throw Error(ErrorCode::invalid_argument, fmt::format("{} {}{}", what, path, e ? std::string(": ") + std::strerror(e) : ""));
}

// An open file, its size, and its header checked against that size.
struct OpenFile {
  std::ifstream in;
  io::Header header;
  uint64_t data_start = 0;
};

OpenFile open_checked(const std::string& path) {
  OpenFile f;
  // A directory or a FIFO is not a file to read (opening a FIFO would wait for a writer).
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw Error(ErrorCode::invalid_argument, fmt::format("load: {} is not a regular file", path));
  f.in.open(path, std::ios::binary);
  if (!f.in) io_error("load: cannot open", path);
  f.in.seekg(0, std::ios::end);
  const std::streamoff end = f.in.tellg();
  if (end < 0 || !f.in) io_error("load: cannot read", path);
  const auto size = static_cast<uint64_t>(end);
  f.in.seekg(0);
  std::string first(8, '\0');
  f.in.read(first.data(), static_cast<std::streamsize>(std::min<uint64_t>(size, 8)));
  uint64_t n = io::header_length(first, size);
  std::string text(n, '\0');
  if (!f.in.read(text.data(), static_cast<std::streamsize>(n))) io_error("load: cannot read the header of", path);
  f.data_start = 8 + n;
  try {
    f.header = io::parse_header(text, size - f.data_start);
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{} (in {})", e.message(), path));
  }
  return f;
}

}  // namespace

std::string to_safetensors(const NamedArrays& arrays, const Metadata& metadata) {
  auto [header, order] = layout(arrays, metadata);
  std::string out = length_prefix(header.size()) + header;
  for (const auto* entry : order) {
    const Array a = on_host(entry->second);
    out.append(static_cast<const char*>(a.data()), a.nbytes());
  }
  return out;
}

NamedArrays from_safetensors(std::string_view bytes, MemoryKind kind, Metadata* metadata) {
  uint64_t n = io::header_length(bytes, bytes.size());
  io::Header h = io::parse_header(bytes.substr(8, n), bytes.size() - 8 - n);
  std::string_view data = bytes.substr(8 + n);
  NamedArrays out;
  for (const io::TensorEntry& e : h.tensors) {
    Array a = Array::allocate(e.dtype, e.shape, kind);
    if (e.end > e.begin) std::memcpy(a.mutable_data(), data.data() + e.begin, e.end - e.begin);
    if (e.dtype == DType::boolean) check_bools(a, e.name);
    out.emplace(e.name, std::move(a));
  }
  if (metadata) *metadata = std::move(h.metadata);
  return out;
}

void save(const std::string& path, const NamedArrays& arrays, const Metadata& metadata) {
  auto [header, order] = layout(arrays, metadata);
  // Written under a temporary name of its own in the same folder, then renamed over the path: a
  // crash mid-save leaves the previous checkpoint intact, concurrent saves of one path never write
  // into one file, and a reader sees one whole checkpoint or another.
  io::AtomicFile file(path, "save");
  const std::string prefix = length_prefix(header.size());
  file.write(prefix.data(), prefix.size());
  file.write(header.data(), header.size());
  for (const auto* entry : order) {
    const Array a = on_host(entry->second);
    file.write(a.data(), a.nbytes());
  }
  file.commit();
}

void check_save_path(const std::string& path) { io::check_writable(path, "save"); }

NamedArrays load(const std::string& path, MemoryKind kind) {
  OpenFile f = open_checked(path);
  NamedArrays out;
  for (const io::TensorEntry& e : f.header.tensors) {
    Array a;
    try {
      a = Array::allocate(e.dtype, e.shape, kind);
    } catch (const Error& error) {  // memory it cannot have: say which tensor of which file wants it
      throw Error(error.code(), fmt::format("load: tensor '{}' of {}: {}", ir::echo(e.name), path, error.message()));
    }
    f.in.seekg(static_cast<std::streamoff>(f.data_start + e.begin));
    if (e.end > e.begin && !f.in.read(static_cast<char*>(a.mutable_data()), static_cast<std::streamsize>(e.end - e.begin)))
      io_error(fmt::format("load: cannot read tensor '{}' of", ir::echo(e.name)), path);
    if (e.dtype == DType::boolean) check_bools(a, e.name);
    out.emplace(e.name, std::move(a));
  }
  return out;
}

Metadata load_metadata(const std::string& path) { return open_checked(path).header.metadata; }

namespace detail {

void missing_array(const std::string& name) {
  throw Error(ErrorCode::invalid_argument, fmt::format("load: no array named '{}'", name));
}

void check_loaded(const std::string& name, const Array& loaded, const Array& like) {
  if (like.defined() && (loaded.dtype() != like.dtype() || loaded.shape() != like.shape()))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("load: array '{}' is {} but {} is wanted", name, type_string(loaded.dtype(), loaded.shape()),
                            type_string(like.dtype(), like.shape())));
}

}  // namespace detail

}  // namespace ferry
