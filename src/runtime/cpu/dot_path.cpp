#include "runtime/cpu/dot_path.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/cpu/cpu_features.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cpu/openblas.h"

namespace ferry::runtime::cpu {
namespace {

constexpr DotPath kAll[] = {DotPath::sse41, DotPath::avx2, DotPath::avx512, DotPath::avx512_bf16, DotPath::amx,
                            DotPath::openblas};

bool processor_has(DotPath p) {
  const CpuFeatures& f = cpu_features();
  switch (p) {
    case DotPath::sse41: return f.sse41;
    case DotPath::avx2: return f.has_avx2();
    case DotPath::avx512: return f.has_avx512_core();
    case DotPath::avx512_bf16: return f.has_avx512_bf16();
    case DotPath::amx: return f.has_amx_bf16();
    case DotPath::openblas: return true;
  }
  return false;
}

dnnl_cpu_isa_t isa_cap(DotPath p) {
  switch (p) {
    case DotPath::sse41: return dnnl_cpu_isa_sse41;
    case DotPath::avx2: return dnnl_cpu_isa_avx2;
    case DotPath::avx512: return dnnl_cpu_isa_avx512_core_vnni;  // core, with VNNI where present
    case DotPath::avx512_bf16: return dnnl_cpu_isa_avx512_core_bf16;
    case DotPath::amx: return dnnl_cpu_isa_avx512_core_amx;
    case DotPath::openblas: return dnnl_cpu_isa_all;
  }
  return dnnl_cpu_isa_all;
}

std::string names() {
  std::string s;
  for (DotPath p : kAll) s += fmt::format("{}{}", s.empty() ? "" : ", ", dot_path_name(p));
  return s;
}

DotPath read_chosen() {
  const char* env = std::getenv("FERRY_DOT_PATH");
  DotPath path = widest_dot_path();
  if (env != nullptr && *env != '\0') {
    const std::string_view want(env);
    const DotPath* it = std::find_if(std::begin(kAll), std::end(kAll), [&](DotPath p) { return dot_path_name(p) == want; });
    if (want == "auto") it = std::find(std::begin(kAll), std::end(kAll), widest_dot_path());
    if (it == std::end(kAll))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("FERRY_DOT_PATH={}: not a dot_general path (one of: auto, {})", want.substr(0, 64), names()));
    if (!processor_has(*it))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("FERRY_DOT_PATH={}: this processor lacks it (it has: {})", want, cpu_features().isa_string()));
    path = *it;
  }
  if (path != DotPath::openblas && dnnl_set_max_cpu_isa(isa_cap(path)) != dnnl_success)
    throw Error(ErrorCode::internal, "oneDNN was used before ferry capped its instruction set");
  return path;
}

}  // namespace

std::string_view dot_path_name(DotPath p) {
  switch (p) {
    case DotPath::sse41: return "sse41";
    case DotPath::avx2: return "avx2";
    case DotPath::avx512: return "avx512";
    case DotPath::avx512_bf16: return "avx512_bf16";
    case DotPath::amx: return "amx";
    case DotPath::openblas: return "openblas";
  }
  return "?";
}

std::vector<DotPath> available_dot_paths() {
  std::vector<DotPath> out;
  for (DotPath p : kAll)
    if (processor_has(p)) out.push_back(p);
  return out;
}

DotPath widest_dot_path() {
  DotPath widest = DotPath::sse41;
  for (DotPath p : kAll)
    if (p != DotPath::openblas && processor_has(p)) widest = p;
  return widest;
}

DotPath chosen_dot_path() {
  // Not a function-local static: an invalid FERRY_DOT_PATH must fail every product, not only the first.
  static std::once_flag once;
  static DotPath path = DotPath::sse41;
  static std::string error;
  std::call_once(once, [] {
    try {
      path = read_chosen();
    } catch (const Error& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw Error(ErrorCode::invalid_argument, error.substr(error.find(':') + 2));
  return path;
}

int dot_path_lanes(DotPath p) {
  switch (p) {
    case DotPath::sse41: return 4;
    case DotPath::avx2: return 8;
    case DotPath::avx512: case DotPath::avx512_bf16: case DotPath::amx: return 16;
    case DotPath::openblas: return openblas_core().lanes;
  }
  return 4;
}

BlasCore openblas_core() {
  BlasCore core;
  core.name = openblas().corename();
  // OpenBLAS's x86 kernels by the vectors they use (its kernel/x86_64 KERNEL.<core> files).
  static constexpr std::pair<std::string_view, int> kLanes[] = {
      {"SkylakeX", 16}, {"Cooperlake", 16}, {"SapphireRapids", 16},
      {"Haswell", 8}, {"Zen", 8}, {"Sandybridge", 8}, {"Excavator", 8}, {"Steamroller", 8}, {"Piledriver", 8},
      {"Bulldozer", 8}};
  core.lanes = 4;  // Prescott, Core2, Nehalem, Barcelona, Atom, ...: SSE
  for (auto [name, lanes] : kLanes) {
    std::string lower(name), have(core.name);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (char& ch : have) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (have == lower) core.lanes = lanes;
  }
  const int offered = dot_path_lanes(widest_dot_path());
  if (core.lanes < offered)
    core.shortfall = fmt::format("OpenBLAS chose its {} kernels ({} f32 lanes) on a processor with {}-lane vectors",
                                 core.name, core.lanes, offered);
  return core;
}

std::string dot_path_summary() {
  const DotPath path = chosen_dot_path();
  const BlasCore blas = openblas_core();
  const std::string openblas = fmt::format("OpenBLAS {}{}", blas.name,
                                           blas.shortfall.empty() ? "" : fmt::format(" (below this processor: {} of {} lanes)",
                                                                                       blas.lanes, dot_path_lanes(widest_dot_path())));
  if (path == DotPath::openblas)
    return fmt::format("dot_general: path openblas (FERRY_DOT_PATH): f32 and f64 on {}, bf16 and f16 widened to f32", openblas);
  // The kernels oneDNN picks for a product of each type (a dense 256^3 one), or none.
  auto onednn = [](DType t) {
    const PreparedGemm* g = prepare_gemm({.dtype = t, .m = 256, .n = 256, .k = 256, .lda = 256, .ldb = 256, .ldc = 256});
    return g ? gemm_implementation(*g) : std::string();
  };
  const std::string f32 = onednn(DType::f32), bf16 = onednn(DType::bf16);
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("dot_general: path {} (oneDNN {}.{}.{}); bf16 {}; f32 {}; f64 {}", dot_path_name(path), v->major,
                     v->minor, v->patch, bf16.empty() ? "widened to f32" : "oneDNN " + bf16,
                     f32.empty() ? openblas : fmt::format("oneDNN {} where large, else {}", f32, openblas), openblas);
}

}  // namespace ferry::runtime::cpu
