#include "runtime/cpu/cpu_features.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ferry::runtime::cpu {
namespace {

#if defined(__x86_64__)
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) return {};
  return r;
}

bool bit(unsigned reg, int b) { return ((reg >> b) & 1u) != 0; }

uint64_t xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Linux keeps AMX's 8 KiB of tile state off until a process asks for it (kernel 5.16 and later);
// asking is harmless where it is granted already and fails cleanly elsewhere.
bool request_amx() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

CpuFeatures read() {
  CpuFeatures f;
  const Regs v = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor, &v.b, 4);
  std::memcpy(vendor + 4, &v.d, 4);
  std::memcpy(vendor + 8, &v.c, 4);
  f.vendor = vendor;
  const Regs l1 = cpuid(1);
  const unsigned base_family = (l1.a >> 8) & 0xf, base_model = (l1.a >> 4) & 0xf;
  f.family = static_cast<int>(base_family == 0xf ? base_family + ((l1.a >> 20) & 0xff) : base_family);
  f.model = static_cast<int>((base_family == 0x6 || base_family == 0xf) ? (((l1.a >> 16) & 0xf) << 4) | base_model
                                                                         : base_model);
  f.stepping = static_cast<int>(l1.a & 0xf);
  f.sse41 = bit(l1.c, 19);
  f.fma = bit(l1.c, 12);
  f.avx = bit(l1.c, 28);
  const bool osxsave = bit(l1.c, 27);
  if (osxsave) {
    const uint64_t x = xcr0();
    f.os_avx = (x & 0x6) == 0x6;                // XMM and YMM state
    f.os_avx512 = f.os_avx && (x & 0xe0) == 0xe0;  // opmask, ZMM0-15 high halves, ZMM16-31
    const bool os_tiles = (x & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
    const Regs l7 = cpuid(7);
    f.avx2 = bit(l7.b, 5);
    f.avx512f = bit(l7.b, 16);
    f.avx512dq = bit(l7.b, 17);
    f.avx512bw = bit(l7.b, 30);
    f.avx512vl = bit(l7.b, 31);
    f.avx512_vnni = bit(l7.c, 11);
    f.avx512_fp16 = bit(l7.d, 23);
    f.amx_bf16 = bit(l7.d, 22);
    f.amx_tile = bit(l7.d, 24);
    f.avx512_bf16 = l7.a >= 1 && bit(cpuid(7, 1).a, 5);
    f.os_amx = os_tiles && f.amx_tile && request_amx();
  }
  if (cpuid(0x80000000).a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const Regs r = cpuid(0x80000002 + i);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    f.brand = brand;
    const size_t first = f.brand.find_first_not_of(' '), last = f.brand.find_last_not_of(' ');
    f.brand = first == std::string::npos ? "" : f.brand.substr(first, last - first + 1);
  }
  return f;
}
#else
CpuFeatures read() { return {}; }
#endif

}  // namespace

std::string CpuFeatures::isa_string() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(sse41, "SSE4.1");
  add(has_avx2(), "AVX2 FMA");
  add(has_avx512_core(), "AVX-512 (F BW VL DQ)");
  add(has_avx512_core() && avx512_vnni, "VNNI");
  add(has_avx512_bf16(), "BF16");
  add(has_avx512_core() && avx512_fp16, "FP16");
  add(amx_tile && amx_bf16, os_amx ? "AMX-BF16" : "AMX-BF16 (not enabled by the OS)");
  return s.empty() ? "x86-64 baseline" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = read();
  return f;
}

}  // namespace ferry::runtime::cpu
