#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry::io {
namespace {

std::string folder_of(const std::string& path) {
  std::string folder = std::filesystem::path(path).parent_path().string();
  return folder.empty() ? "." : folder;
}

// The permissions an ordinary new file gets (0666 less the umask): mkstemp makes its file 0600,
// which would leave a checkpoint unreadable to the group that could read the one it replaces. The
// umask is read from /proc: umask() itself sets it, which races with other threads.
mode_t new_file_mode() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0) {
      const char* digits = line.c_str() + 6;
      char* end = nullptr;
      const unsigned long mask = std::strtoul(digits, &end, 8);
      if (end != digits) return static_cast<mode_t>(0666 & ~mask);
    }
  return 0644;
}

int sync_folder(const std::string& folder) {
  int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = ::fsync(fd);
  // Some file systems cannot sync a folder (EINVAL); there the rename is as durable as they make it.
  if (rc != 0 && errno == EINVAL) rc = 0;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return rc;
}

}  // namespace

AtomicFile::AtomicFile(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)), folder_(folder_of(path_)) {
  std::string name = path_ + ".tmp-XXXXXX";
  std::vector<char> buffer(name.begin(), name.end());
  buffer.push_back('\0');
  fd_ = ::mkstemp(buffer.data());
  if (fd_ < 0) fail("cannot create a file in the folder of", path_);
  temp_ = buffer.data();
  if (::fchmod(fd_, new_file_mode()) != 0) fail("cannot set the permissions of", temp_);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& doing, const std::string& which) const {
  const int e = errno;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("{}: {} {}{}", what_, doing, which, e ? std::string(": ") + std::strerror(e) : ""));
}

void AtomicFile::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write", temp_);
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  // The data on disk before the name points at it; the folder synced so the temporary's entry is
  // too, then again so the rename is.
  if (::fsync(fd_) != 0) fail("cannot sync", temp_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot write", temp_);
  if (sync_folder(folder_) != 0) fail("cannot sync the folder", folder_);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("cannot rename the written file to", path_);
  committed_ = true;
  if (sync_folder(folder_) != 0) fail("cannot sync the folder", folder_);
}

void check_writable(const std::string& path, const std::string& what) {
  auto refuse = [&](const std::string& why) {
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: cannot write {}: {}", what, path, why));
  };
  if (path.empty()) refuse("the path is empty");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) refuse("it is a folder");
  const std::string folder = folder_of(path);
  if (!std::filesystem::exists(folder, ec)) refuse(fmt::format("the folder {} does not exist", folder));
  if (!std::filesystem::is_directory(folder, ec)) refuse(fmt::format("{} is not a folder", folder));
  AtomicFile probe(path, what);  // creates (and, committed never, removes) a file where save would
}

}  // namespace ferry::io
