// A file written beside its final path and renamed over it when complete, so that a reader (or a
// power loss) sees the old file or the new one, never a part of either.
#pragma once

#include <cstddef>
#include <string>

namespace ferry::io {

class AtomicFile {
 public:
  // Creates a temporary file of its own in path's folder (mkstemp: concurrent writers of one path
  // never share it). INVALID_ARGUMENT naming `what` and the path when it cannot be created.
  AtomicFile(std::string path, std::string what);
  ~AtomicFile();  // removes the temporary file unless commit() renamed it
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  // Syncs the file and its folder, renames the file over the path, and syncs the folder again: the
  // rename is atomic, and once commit() returns the new file survives a power loss.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& doing, const std::string& which) const;

  std::string path_, what_, folder_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// INVALID_ARGUMENT naming `what` unless a file could be written at `path` now: its folder exists and
// takes a new file, and the path is not a folder. A long job checks this before it starts, rather
// than fail to save what it computed.
void check_writable(const std::string& path, const std::string& what);

}  // namespace ferry::io
