#include "runtime/cpu/openblas.h"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/cpu/cpu_features.h"
#include "runtime/cpu/dot_path.h"

#ifndef FERRY_OPENBLAS_LIBRARY
#define FERRY_OPENBLAS_LIBRARY "libopenblas.so.0"
#endif

namespace ferry::runtime::cpu {
namespace {

template <class F> F symbol(void* lib, const char* name) {
  void* s = dlsym(lib, name);
  if (s == nullptr) throw Error(ErrorCode::internal, fmt::format("OpenBLAS has no {}: {}", name, dlerror()));
  return reinterpret_cast<F>(s);
}

OpenBlas load() {
  OpenBlas b;
  // OpenBLAS reads OPENBLAS_CORETYPE once, while it loads: set it to ferry's choice for that moment
  // and put back what the process had (other libraries may read it).
  const char* own = std::getenv("FERRY_OPENBLAS_CORETYPE");
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = before ? before : "";
  b.requested_core = own && *own ? own : openblas_core_for(cpu_features(), chosen_dot_path());
  setenv("OPENBLAS_CORETYPE", b.requested_core.c_str(), 1);
  // The soname first (Debian's alternatives choose the build), then the file the build linked.
  void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) lib = dlopen(FERRY_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (before) setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  else unsetenv("OPENBLAS_CORETYPE");
  if (lib == nullptr) throw Error(ErrorCode::internal, fmt::format("cannot load OpenBLAS: {}", dlerror()));
  b.sgemm = symbol<decltype(b.sgemm)>(lib, "cblas_sgemm");
  b.dgemm = symbol<decltype(b.dgemm)>(lib, "cblas_dgemm");
  b.corename = symbol<decltype(b.corename)>(lib, "openblas_get_corename");
  b.set_num_threads = symbol<decltype(b.set_num_threads)>(lib, "openblas_set_num_threads");
  b.set_num_threads(1);
  return b;
}

}  // namespace

std::string openblas_core_for(const CpuFeatures& f, DotPath path) {
  // A path below the processor (FERRY_DOT_PATH=avx2, say) holds OpenBLAS to it too.
  const bool avx512 = f.has_avx512_core() && path != DotPath::sse41 && path != DotPath::avx2;
  const bool avx2 = f.has_avx2() && path != DotPath::sse41;
  if (avx512) return "SkylakeX";
  if (avx2) return "Haswell";
  if (f.avx && f.os_avx && path != DotPath::sse41) return "Sandybridge";
  if (f.sse41) return "Nehalem";
  return "Prescott";
}

const OpenBlas& openblas() {
  static const OpenBlas b = load();
  return b;
}

}  // namespace ferry::runtime::cpu
