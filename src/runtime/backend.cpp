// The registry of backends this build has: "cpu" always, "cuda" where CMake found the CUDA toolkit
// (FERRY_HAS_CUDA, runtime/cuda/).
#include "runtime/backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ferry/error.h"
#include "ferry/options.h"
#include "ir/echo.h"

namespace ferry::runtime {

#if FERRY_HAS_CUDA
namespace cuda {
// The CUDA backend, or null with `why` set where no GPU can be used (runtime/cuda/backend.cpp).
Backend* backend(std::string* why);
}  // namespace cuda
#endif

std::vector<std::string> built_backends() {
#if FERRY_HAS_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

bool backend_available(std::string_view name, std::string* why) {
  if (name == "cpu") return true;
#if FERRY_HAS_CUDA
  if (name == "cuda") {
    std::string reason;
    if (cuda::backend(&reason) != nullptr) return true;
    if (why) *why = reason;
    return false;
  }
#endif
  if (why)
    *why = fmt::format("backend \"{}\" is not available; this build has \"{}\"", ir::echo(name),
                       fmt::join(built_backends(), "\", \""));
  return false;
}

Backend& backend(std::string_view name) {
  if (name == "cpu") return cpu_backend();
#if FERRY_HAS_CUDA
  if (name == "cuda") {
    std::string why;
    if (Backend* b = cuda::backend(&why)) return *b;
    throw Error(ErrorCode::unimplemented, fmt::format("backend \"cuda\" cannot run here: {}", why));
  }
#endif
  std::string why;
  backend_available(name, &why);
  throw Error(ErrorCode::unimplemented, why);
}

}  // namespace ferry::runtime

namespace ferry {

std::vector<std::string> built_backends() { return runtime::built_backends(); }
bool backend_available(const std::string& backend, std::string* why) { return runtime::backend_available(backend, why); }

}  // namespace ferry
