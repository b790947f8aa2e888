// The CPU backend: every memory kind is host RAM (runtime/memory_resource.h's host resources), the
// copy engine is a queue whose bytes the cores move while they have nothing else to do
// (runtime/copy_queue.h), and there is no stream: kernels run on the calling thread and are done
// when they return.
#include <algorithm>
#include <cstring>

#include "ferry/options.h"
#include "runtime/backend.h"
#include "runtime/copy_queue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/parallel.h"
#include "runtime/process_group.h"

namespace ferry::runtime {
namespace {

class CpuBackend final : public Backend {
 public:
  // The pool's threads copy while they would wait (copy_queue.h says why).
  CpuBackend() { cpu::set_idle_work(&CopyQueue::help_any); }
  std::string_view name() const override { return "cpu"; }
  KernelFn kernel(Primitive p) const override { return cpu::kernel(p); }
  std::shared_ptr<const void> prepare(const ir::Equation& eq) const override {
    return eq.prim == ir::op::fused ? cpu::prepare_fused(eq) : nullptr;
  }
  WorkspaceSizeFn workspace_size(Primitive p) const override { return cpu::workspace_size(p); }
  MemoryResource& memory(MemoryKind kind) override { return host_resource(kind); }
  std::unique_ptr<CopyEngine> make_copy_engine() override { return std::make_unique<CopyQueue>(); }
  Exchanges* exchanges(std::string*) override { return &processes::exchanges(); }  // MPI's, on host memory
  Stream compute_stream() override { return {}; }
  void synchronize(Stream) override {}
  void copy(void* dst, const void* src, size_t bytes, Stream) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void fill(void* dst, MemoryKind, unsigned char byte, size_t bytes, Stream) override {
    if (bytes) std::memset(dst, byte, bytes);
  }
  // The cost model's defaults are this project's reference CPU machine (CompileOptions).
  DeviceFacts facts() const override {
    DeviceFacts f;
    f.description = "CPU";
    f.rates = Rates{};  // the reference machine's (docs/COST_MODEL.md); `ferry calibrate` measures this one
    f.copy_compute_share = 1.0 / std::max(1, cpu::num_threads());
    return f;
  }
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend* const backend = new CpuBackend;  // never destroyed: Arrays outlive static order
  return *backend;
}

}  // namespace ferry::runtime
