// What this processor can do, read from cpuid and from the OS (xgetbv, arch_prctl), never from its
// model number: kernels choose their code by these features, so a processor newer than the
// libraries that ship with the system runs the widest code it supports.
#pragma once

#include <string>

namespace ferry::runtime::cpu {

struct CpuFeatures {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", ...
  std::string brand;   // cpuid's brand string, e.g. "AMD EPYC" or "Intel(R) Xeon(R) Processor"
  int family = 0, model = 0, stepping = 0;  // as the OS reports them (extended fields folded in)
  bool sse41 = false, avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;  // AVX-512 "core"
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false;
  bool amx_tile = false, amx_bf16 = false;  // reported by cpuid
  // The register state the OS saves on a context switch: without it an extension cannot be used.
  bool os_avx = false, os_avx512 = false;
  // AMX tile data: the OS supports it and granted this process permission (Linux asks for it with
  // arch_prctl(ARCH_REQ_XCOMP_PERM)).
  bool os_amx = false;

  bool has_avx2() const { return avx2 && fma && os_avx; }
  bool has_avx512_core() const { return avx512f && avx512bw && avx512vl && avx512dq && os_avx512; }
  bool has_avx512_bf16() const { return has_avx512_core() && avx512_bf16; }
  bool has_amx_bf16() const { return has_avx512_bf16() && amx_tile && amx_bf16 && os_amx; }
  // The extensions, e.g. "AVX2 FMA AVX-512 (F BW VL DQ) VNNI BF16".
  std::string isa_string() const;
};

// This processor's features (read once).
const CpuFeatures& cpu_features();

}  // namespace ferry::runtime::cpu
