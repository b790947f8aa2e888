#include "runtime/cuda/nccl_comm.h"

#include <array>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/cuda/kernels.h"
#include "runtime/process_group.h"

#ifdef FERRY_HAS_NCCL
#include <nccl.h>
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "ferry needs NCCL 2.14 or newer (non-blocking communicators); configure with -DFERRY_NCCL=OFF to leave it out"
#endif
#endif

namespace ferry::runtime::cuda {

#ifdef FERRY_HAS_NCCL
namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Between two polls: the core given away to any thread that wants it, back to back for a while
// (a short exchange or kernel), then less eagerly (the process group's rhythm).
void pause(double waited_seconds) {
  if (waited_seconds > 0.05) std::this_thread::sleep_for(std::chrono::microseconds(20));
  else std::this_thread::yield();
}

// NCCL's failures as ferry's errors: what a caller got wrong (a type NCCL refuses, two processes
// on one GPU) is INVALID_ARGUMENT; everything else is the transport failing (a peer gone, the
// network, the GPU), UNAVAILABLE. None is INTERNAL: ferry's own calls are checked before NCCL's.
ErrorCode code_of(ncclResult_t r) {
  return r == ncclInvalidArgument || r == ncclInvalidUsage ? ErrorCode::invalid_argument : ErrorCode::unavailable;
}

ncclDataType_t summed_type(DType t, const char* what) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::i32: return ncclInt32;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::boolean: break;
  }
  throw Error(ErrorCode::invalid_argument, fmt::format("{}: cannot sum {} values", what, dtype_name(t)));
}

// NCCL reads and writes device memory: an operand in host memory (pinned or not) is refused
// before any exchange starts (every process refuses the same program the same way).
void expect_device_memory(const void* p, const char* what) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // not a pointer CUDA knows: ordinary host memory
    a.type = cudaMemoryTypeUnregistered;
  }
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    throw Error(ErrorCode::unimplemented,
                fmt::format("{}: the cuda backend exchanges device memory only (NCCL's); this value is in host "
                            "memory: device_put it to MemoryKind::device first",
                            what));
}

class Nccl final : public Exchanges {
 public:
  uint64_t start(Kind kind, const void* x, void* y, int64_t count, DType dtype, const char* what,
                 Stream stream) override {
    std::lock_guard<std::mutex> lock(mu_);
    expect_working(what);
    expect_device_memory(x, what);
    expect_device_memory(y, what);
    const ncclDataType_t type = kind == Kind::all_gather ? ncclUint8 : summed_type(dtype, what);
    const auto n = static_cast<size_t>(kind == Kind::all_gather ? count * static_cast<int64_t>(dtype_size(dtype)) : count);
    join(what);
    watch();
    pending_.push_back(Pending{next_++, what, take_event(), take_event()});
    const Pending& p = pending_.back();
    check_cuda(cudaEventRecord(p.ready, static_cast<cudaStream_t>(stream.handle)), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, p.ready, 0), "cudaStreamWaitEvent");
    ncclResult_t r = ncclSuccess;
    switch (kind) {
      case Kind::all_reduce_sum: r = ncclAllReduce(x, y, n, type, ncclSum, comm_, stream_); break;
      case Kind::all_gather: r = ncclAllGather(x, y, n, type, comm_, stream_); break;
      case Kind::reduce_scatter_sum: r = ncclReduceScatter(x, y, n, type, ncclSum, comm_, stream_); break;
    }
    settle(r, what);
    check_cuda(cudaEventRecord(p.done, stream_), "cudaEventRecord");
    return p.ticket;
  }

  void wait(uint64_t ticket, Stream stream) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Pending& p : pending_)
      if (p.ticket == ticket) {
        check_cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream.handle), p.done, 0), "cudaStreamWaitEvent");
        return;
      }
    expect_working("collective_done");  // not in flight: finished, unless the communicator failed
  }

  cudaError_t wait_for(cudaStream_t stream) {
    cudaStream_t exchanges = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.empty() && broken_.empty()) return cudaStreamSynchronize(stream);  // no exchange to wait behind
      exchanges = stream_;
    }
    const double start = now();
    for (;;) {
      const cudaError_t status = cudaStreamQuery(stream);
      if (status != cudaErrorNotReady) {
        if (status != cudaSuccess || exchanges == nullptr) return status;
        const cudaError_t exchanged = cudaStreamQuery(exchanges);
        if (exchanged != cudaErrorNotReady) return exchanged;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        watch();
        // An aborted communicator releases its kernels; should the GPU still not finish, this
        // process gives up on it rather than wait for ever.
        if (!broken_.empty() && now() - start > timeout_)
          throw Error(ErrorCode::unavailable,
                      fmt::format("the GPU's work did not finish {:.0f} s after NCCL's communicator was aborted ({})",
                                  timeout_, broken_));
      }
      pause(now() - start);
    }
  }

 private:
  struct Pending {
    uint64_t ticket = 0;
    const char* what = "";
    cudaEvent_t ready = nullptr;  // on the compute stream: the operand is written
    cudaEvent_t done = nullptr;   // on the exchanges' stream: the result is
    double running_since = 0;     // when it was first seen running (0: not yet)
  };

  void expect_working(const char* what) const {
    if (!broken_.empty())
      throw Error(broken_code_,
                  fmt::format("{}: an earlier exchange with the other processes failed ({}); this process cannot "
                              "exchange with them again",
                              what, broken_));
  }

  // The communicator, made at the first exchange (mu_ held).
  void join(const char* what) {
    if (comm_ != nullptr) return;
    const int n = processes::count(), me = processes::index();
    timeout_ = processes::timeout_seconds();
    // Process 0's id, and whether it could draw one, reach every process through the process group
    // (which refuses a process that has not joined the others).
    std::array<char, 1 + sizeof(ncclUniqueId)> offer{};
    ncclResult_t drawn = ncclSuccess;
    if (me == 0) {
      ncclUniqueId id{};
      drawn = ncclGetUniqueId(&id);
      offer[0] = drawn == ncclSuccess;
      std::memcpy(offer.data() + 1, &id, sizeof id);
    }
    std::vector<char> offers(offer.size() * static_cast<size_t>(n));
    processes::all_gather(offer.data(), offers.data(), static_cast<int64_t>(offer.size()), what);
    if (offers[0] == 0)
      throw Error(ErrorCode::unavailable,
                  fmt::format("{}: process 0 could not draw NCCL's id{}", what,
                              me == 0 ? fmt::format(" ({})", ncclGetErrorString(drawn)) : std::string()));
    ncclUniqueId id;
    std::memcpy(&id, offers.data() + 1, sizeof id);
    if (stream_ == nullptr) check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    settle(ncclCommInitRankConfig(&comm_, n, id, me, &config), what);
  }

  // A call's result: a call still in progress (non-blocking) is polled until it is done, up to the
  // timeout; a failure aborts the communicator.
  void settle(ncclResult_t r, const char* what) {
    const double start = now();
    while (r == ncclInProgress) {
      if (now() - start > timeout_) fail_stalled(what);
      pause(now() - start);
      if (ncclResult_t asked = ncclCommGetAsyncError(comm_, &r); asked != ncclSuccess) r = asked;
    }
    if (r != ncclSuccess) fail(code_of(r), failure(what, r));
  }

  // Retires the exchanges that are done, in order (one stream runs them); fails the one running
  // past the timeout, or any NCCL reports failed (mu_ held).
  void watch() {
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      const cudaError_t done = cudaEventQuery(p.done);
      if (done == cudaSuccess) {
        events_.push_back(p.ready);
        events_.push_back(p.done);
        pending_.pop_front();
        continue;
      }
      if (done != cudaErrorNotReady) break;  // the GPU failed: the stream's status reports it
      if (cudaEventQuery(p.ready) == cudaSuccess) {  // its operand is ready and the ones before it are done
        const double t = now();
        if (p.running_since == 0) p.running_since = t;
        else if (t - p.running_since > timeout_) fail_stalled(p.what);
      }
      break;
    }
    if (comm_ == nullptr) return;
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t asked = ncclCommGetAsyncError(comm_, &state); asked != ncclSuccess) state = asked;
    if (state != ncclSuccess && state != ncclInProgress)
      fail(code_of(state), failure(pending_.empty() ? "a collective" : pending_.front().what, state));
  }

  std::string failure(const char* what, ncclResult_t r) const {
    const char* last = ncclGetLastError(comm_);
    return fmt::format("{}: NCCL failed: {}{}{}", what, ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
  }

  // Gives the communicator up: its kernels are released (ncclCommAbort), and the exchanges in flight
  // forgotten (their events are freed once the stream passes them).
  void abort(ErrorCode code, const std::string& why) {
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    broken_ = why;
    broken_code_ = code;
    for (const Pending& p : pending_) cudaEventDestroy(p.ready), cudaEventDestroy(p.done);
    pending_.clear();
  }
  [[noreturn]] void fail(ErrorCode code, const std::string& message) {
    abort(code, message);
    if (code == ErrorCode::unavailable) processes::abandon();  // a peer is gone: MPI_Finalize would wait for it
    throw Error(code, message);
  }
  [[noreturn]] void fail_stalled(const char* what) {
    abort(ErrorCode::unavailable, fmt::format("{} waited {:.0f} s for the other processes", what, timeout_));
    processes::time_out(what);
  }

  cudaEvent_t take_event() {
    if (events_.empty()) {
      cudaEvent_t e = nullptr;
      check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      return e;
    }
    cudaEvent_t e = events_.back();
    events_.pop_back();
    return e;
  }

  std::mutex mu_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;  // the exchanges' stream
  std::string broken_;             // why the communicator was given up ("" while it works)
  ErrorCode broken_code_ = ErrorCode::unavailable;
  std::deque<Pending> pending_;    // started and not seen done, in the order they run
  std::vector<cudaEvent_t> events_;  // free for reuse
  uint64_t next_ = 1;
  double timeout_ = 300;
};

// Never destroyed: NCCL's threads end with the process, and destroying the communicator at exit
// would wait for exchanges a failed peer never finishes.
Nccl& nccl() {
  static Nccl* const n = new Nccl;
  return *n;
}

}  // namespace

Exchanges* nccl_exchanges(std::string*) { return &nccl(); }

int wait_for_stream(Stream stream) { return nccl().wait_for(static_cast<cudaStream_t>(stream.handle)); }

#else

Exchanges* nccl_exchanges(std::string* why) {
#ifdef FERRY_NCCL_LEFT_OUT
  const char* left_out = FERRY_NCCL_LEFT_OUT;
#else
  const char* left_out = "not configured";
#endif
  if (why)
    *why = fmt::format("this ferry was built without NCCL ({}), which the cuda backend's collectives run on; "
                       "install MPI (libopenmpi-dev, openmpi-bin) and NCCL (the CUDA toolkit's, or libnccl-dev), "
                       "then configure again",
                       left_out);
  return nullptr;
}

int wait_for_stream(Stream stream) { return cudaStreamSynchronize(static_cast<cudaStream_t>(stream.handle)); }

#endif

}  // namespace ferry::runtime::cuda
