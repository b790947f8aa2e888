// The CUDA backend (runtime/backend.h) on one GPU: the first visible one, or where a launcher
// started several processes on the machine, one per process (its local rank modulo the GPUs);
//   - device memory from cudaMalloc, pinned_host from cudaHostAlloc, unpinned_host ordinary host
//     memory (the CPU backend's resource); each counted where it is handed out, so a run's measured
//     peak is what the CUDA allocator gave it. Blocks given back are kept for reuse by the same
//     size (cudaFree and cudaFreeHost synchronise the whole device; a training step allocates the
//     same arena every call);
//   - one compute stream for every kernel, and a copy engine per compiled program with one stream
//     per direction: a copy waits (through an event) for the compute stream's work before it, and
//     copy_done makes the compute stream wait for the copy's event, so copies run beside compute
//     exactly between the plan's copy_start and copy_done. A copy from or to unpinned_host memory
//     cannot run asynchronously: it waits for the compute stream and blocks the host (the cost
//     model is told so: DeviceFacts::unpinned_copies_synchronous);
//   - cuBLAS for dot_general (dot.cpp), kernels of our own for the rest (kernels.cpp, *.cu);
//   - NCCL for the collectives (nccl_comm.h), where it is built. Every wait of the host for the GPU
//     goes through nccl_comm.h's wait_for_stream, which watches the exchanges in flight.
#include "runtime/cuda/backend.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/copy_queue.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/nccl_comm.h"

namespace ferry::runtime::cuda {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(ErrorCode::internal, fmt::format("CUDA: {} failed: {}", what, cudaGetErrorString(status)));
}

// The host waits for the stream's work, watching NCCL's exchanges in flight (nccl_comm.h).
cudaError_t synchronized(cudaStream_t stream) { return static_cast<cudaError_t>(wait_for_stream(Stream{stream})); }

// Blocks given back, kept for reuse by an allocation of the same size (the newest first), up to
// kEntries blocks and `limit` bytes; the oldest are freed first.
class BlockCache {
 public:
  static constexpr size_t kEntries = 8;
  using Free = void (*)(void*);
  BlockCache(Free free, size_t limit) : free_(free), limit_(limit) {}

  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it)
      if (it->first == bytes) {
        void* p = it->second;
        held_ -= bytes;
        blocks_.erase(std::next(it).base());
        return p;
      }
    return nullptr;
  }
  void give(void* p, size_t bytes) {
    std::vector<void*> evicted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bytes > limit_) {
        evicted.push_back(p);
      } else {
        blocks_.emplace_back(bytes, p);
        held_ += bytes;
        while (held_ > limit_ || blocks_.size() > kEntries) {
          evicted.push_back(blocks_.front().second);
          held_ -= blocks_.front().first;
          blocks_.pop_front();
        }
      }
    }
    for (void* q : evicted) free_(q);
  }
  // Frees every cached block (before an allocation that failed is retried).
  void clear() {
    std::deque<std::pair<size_t, void*>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.swap(blocks_);
      held_ = 0;
    }
    for (auto [bytes, p] : all) free_(p);
  }
  size_t held() const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }

 private:
  Free free_;
  size_t limit_;
  mutable std::mutex mu_;
  std::deque<std::pair<size_t, void*>> blocks_;
  size_t held_ = 0;
};

// device and pinned_host: the allocator's bytes, counted, with given-back blocks cached.
class CudaMemory final : public MemoryResource {
 public:
  using Alloc = cudaError_t (*)(void**, size_t);
  CudaMemory(MemoryKind kind, Alloc alloc, BlockCache::Free free, size_t cache_limit, void* empty)
      : kind_(kind), alloc_(alloc), cache_(free, cache_limit), empty_(empty) {}

  MemoryKind kind() const override { return kind_; }
  bool host_accessible() const override { return kind_ != MemoryKind::device; }

  void* allocate(size_t bytes, Tally* tally) override {
    if (bytes == 0) return empty_;
    void* p = cache_.take(bytes);
    if (p == nullptr && alloc_(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // the failure is reported here, not by the next launch
      cache_.clear();
      p = nullptr;
      if (alloc_(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        size_t free = 0, total = 0;
        cudaMemGetInfo(&free, &total);
        throw Error(ErrorCode::resource_exhausted,
                    fmt::format("could not allocate {} bytes of {} memory on the GPU ({} of {} bytes of device memory "
                                "free)",
                                bytes, memory_kind_name(kind_), free, total));
      }
    }
    count_allocation(kind_, static_cast<int64_t>(bytes), tally);
    return p;
  }
  void deallocate(void* p, size_t bytes, Tally* tally) override {
    if (p == nullptr || p == empty_) return;
    count_allocation(kind_, -static_cast<int64_t>(bytes), tally);
    cache_.give(p, bytes);
  }
  size_t cached() const { return cache_.held(); }

 private:
  MemoryKind kind_;
  Alloc alloc_;
  BlockCache cache_;
  void* empty_;
};

cudaError_t device_alloc(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
void device_free(void* p) { cudaFree(p); }
cudaError_t pinned_alloc(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocDefault); }
void pinned_free(void* p) { cudaFreeHost(p); }

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class CudaCopies final : public CopyEngine {
 public:
  static constexpr size_t kEvents = 1024;  // tickets in flight at most (a ring of events)

  explicit CudaCopies(cudaStream_t compute) : compute_(compute), ready_(kEvents), done_(kEvents) {
    for (cudaStream_t& s : streams_) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    for (size_t i = 0; i < kEvents; ++i) {
      check(cudaEventCreateWithFlags(&ready_[i], cudaEventDisableTiming), "cudaEventCreate");
      check(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming), "cudaEventCreate");
    }
  }
  ~CudaCopies() override {
    for (cudaStream_t s : streams_) cudaStreamSynchronize(s);
    for (size_t i = 0; i < kEvents; ++i) cudaEventDestroy(ready_[i]), cudaEventDestroy(done_[i]);
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  }

  uint64_t enqueue(void* dst, MemoryKind to, const void* src, MemoryKind from, size_t bytes, Observer observer) override {
    const uint64_t ticket = next_++;
    const size_t slot = ticket % kEvents;
    if (to == MemoryKind::unpinned_host || from == MemoryKind::unpinned_host) {
      // Pageable memory: the copy waits for the kernels before it and blocks the host.
      check(synchronized(compute_), "cudaStreamSynchronize");
      const double begin = now();
      if (bytes) check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
      if (observer) observer(ticket, bytes, begin, now());
      check(cudaEventRecord(done_[slot], compute_), "cudaEventRecord");
      return ticket;
    }
    cudaStream_t s = streams_[to == MemoryKind::device ? 0 : 1];
    check(cudaEventRecord(ready_[slot], compute_), "cudaEventRecord");
    check(cudaStreamWaitEvent(s, ready_[slot], 0), "cudaStreamWaitEvent");
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync");
    check(cudaEventRecord(done_[slot], s), "cudaEventRecord");
    // Asynchronous copies are not timed on the host: the timeline's copy lane shows the
    // synchronous ones only (a profiler such as nsys shows these).
    return ticket;
  }
  void wait(uint64_t ticket) override {
    check(cudaStreamWaitEvent(compute_, done_[ticket % kEvents], 0), "cudaStreamWaitEvent");
  }
  void drain() override {
    for (cudaStream_t s : streams_) check(synchronized(s), "cudaStreamSynchronize");
  }

 private:
  cudaStream_t compute_;
  cudaStream_t streams_[2] = {};  // to the device, and to host kinds
  std::vector<cudaEvent_t> ready_, done_;
  uint64_t next_ = 1;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device) : device_index_(device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaGetDeviceProperties(&props_, device), "cudaGetDeviceProperties");
    check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreate");
    if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS)
      throw Error(ErrorCode::internal, "CUDA: cublasCreate failed");
    // Pedantic-free default math: f32 GEMMs do not use TF32 unless dot.cpp asks for it.
    cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH);
    check(cudaMalloc(&empty_device_, 256), "cudaMalloc");  // what zero-byte device allocations point at
    const size_t cache_limit = props_.totalGlobalMem / 8;
    device_ = std::make_unique<CudaMemory>(MemoryKind::device, device_alloc, device_free, cache_limit, empty_device_);
    pinned_ = std::make_unique<CudaMemory>(MemoryKind::pinned_host, pinned_alloc, pinned_free, size_t{1} << 30,
                                           static_cast<void*>(empty_host_));
  }

  std::string_view name() const override { return "cuda"; }
  KernelFn kernel(Primitive p) const override { return cuda::kernel(p); }
  WorkspaceSizeFn workspace_size(Primitive p) const override { return cuda::workspace_size(p); }
  MemoryResource& memory(MemoryKind kind) override {
    switch (kind) {
      case MemoryKind::device: return *device_;
      case MemoryKind::pinned_host: return *pinned_;
      case MemoryKind::unpinned_host: return host_resource(MemoryKind::unpinned_host);
    }
    throw Error(ErrorCode::invalid_argument, fmt::format("unknown memory kind #{}", static_cast<int>(kind)));
  }
  std::unique_ptr<CopyEngine> make_copy_engine() override { return std::make_unique<CudaCopies>(compute_); }
  Exchanges* exchanges(std::string* why) override { return nccl_exchanges(why); }
  // Each run starts here, on the thread that runs it: its kernels go to this backend's GPU.
  Stream compute_stream() override {
    check(cudaSetDevice(device_index_), "cudaSetDevice");
    return {compute_};
  }
  void synchronize(Stream stream) override {
    const cudaError_t e = synchronized(static_cast<cudaStream_t>(stream.handle));
    if (e != cudaSuccess)
      throw Error(ErrorCode::internal, fmt::format("CUDA: the GPU reported an error: {}", cudaGetErrorString(e)));
  }
  void copy(void* dst, const void* src, size_t bytes, Stream stream) override {
    if (bytes && dst != src)
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream.handle)),
            "cudaMemcpyAsync");
  }
  void fill(void* dst, MemoryKind kind, unsigned char byte, size_t bytes, Stream stream) override {
    if (!bytes) return;
    if (kind == MemoryKind::device) {
      check(cudaMemsetAsync(dst, byte, bytes, static_cast<cudaStream_t>(stream.handle)), "cudaMemsetAsync");
    } else {  // host memory: after the stream's work on it
      synchronize(stream);
      std::memset(dst, byte, bytes);
    }
  }
  DeviceFacts facts() const override {
    DeviceFacts f;
    f.description = props_.name;
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    f.memory_bytes = static_cast<int64_t>(total);
    // Blocks this process caches for reuse are free for its programs.
    f.free_memory_bytes = static_cast<int64_t>(free + device_->cached());
    // Nominal rates (the cost model's defaults on this backend, not measurements): FP32 lanes x
    // clock x 2 for FMA, and the memory bus. The copy link is PCIe 4/5 x16's usable ~25/50 GB/s.
    int sms = 0, clock_khz = 0, mem_khz = 0, bus_bits = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_index_);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device_index_);
    cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device_index_);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device_index_);
    const double lanes = props_.major >= 8 ? 128 : 64;
    f.rates.compute_flops_per_s = sms > 0 && clock_khz > 0 ? 2.0 * lanes * sms * clock_khz * 1e3 : 1e13;
    f.rates.memory_bytes_per_s = mem_khz > 0 && bus_bits > 0 ? 2.0 * mem_khz * 1e3 * bus_bits / 8 : 1e12;
    f.rates.link_bandwidth_bytes_per_s = props_.major >= 9 ? 50e9 : 25e9;
    // Elementwise work runs on the same FP32 lanes (at most); transcendentals on the special
    // function units, 16 per SM per clock.
    f.rates.vector_flops_per_s = f.rates.compute_flops_per_s;
    f.rates.transcendentals_per_s = sms > 0 && clock_khz > 0 ? 16.0 * sms * clock_khz * 1e3 : 1e12;
    f.unpinned_copies_synchronous = true;
    return f;
  }
  int64_t device_used_bytes() override {
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return static_cast<int64_t>(total - free);
  }
  cublasHandle_t cublas() const { return cublas_; }

 private:
  int device_index_ = 0;
  cudaDeviceProp props_{};
  cudaStream_t compute_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* empty_device_ = nullptr;
  alignas(256) char empty_host_[256] = {};
  std::unique_ptr<CudaMemory> device_, pinned_;
};

// This process's GPU: the launcher's local rank (the processes it started on this machine, as
// Open MPI, MPICH and Slurm name it) modulo the GPUs, so that each process of a launch has its own
// while there are enough (NCCL refuses two processes on one GPU); else the first.
int device_for_this_process(int count) {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* s = std::getenv(v)) {
      const int rank = std::atoi(s);
      return rank > 0 ? rank % count : 0;
    }
  return 0;
}

struct Made {
  CudaBackend* backend = nullptr;
  std::string why;
};

const Made& made() {
  // Never destroyed: Arrays of this backend may be given back during exit.
  static const Made* m = [] {
    auto* r = new Made;
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      cudaGetLastError();
      r->why = fmt::format("no usable GPU: cudaGetDeviceCount failed ({})", cudaGetErrorString(e));
    } else if (count == 0) {
      r->why = "no GPU: cudaGetDeviceCount found 0 devices";
    } else {
      try {
        r->backend = new CudaBackend(device_for_this_process(count));
      } catch (const Error& err) {
        r->why = fmt::format("the GPU could not be set up: {}", err.message());
      }
    }
    return r;
  }();
  return *m;
}

}  // namespace

Backend* backend(std::string* why) {
  const Made& m = made();
  if (m.backend == nullptr && why) *why = m.why;
  return m.backend;
}

void* cublas_handle() { return made().backend ? made().backend->cublas() : nullptr; }

}  // namespace ferry::runtime::cuda
