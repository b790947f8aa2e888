// The processes of one launch (ferry/distributed.h) as the runtime sees them: joining them, and
// the collectives the kernels run. Open MPI is the transport (built where CMake finds MPI:
// FERRY_HAS_MPI); without it joining is UNIMPLEMENTED and a group of one process is all there is.
//
// Every exchange is started non-blocking and waited for by polling until a deadline (join's
// timeout): a process that stops taking part makes the others fail with UNAVAILABLE naming the
// exchange, instead of hanging. MPI's own buffers are the transport's; the data ferry exchanges
// lives in the buffers the caller passes (planned by the memory plan).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/types.h"
#include "runtime/backend.h"

namespace ferry::runtime::processes {

// Whether a launcher (mpirun, srun) started this process.
bool launched();
// Joins the launch's processes (MPI_Init_thread once; MPI_Finalize at exit). INVALID_ARGUMENT where
// no launcher started this process or where it already joined; UNIMPLEMENTED without MPI.
void join(double timeout_seconds);
bool joined();
int index();  // 0 before join
int count();  // 1 before join
double timeout_seconds();

// y = the elementwise sum of every process's x (count elements of dtype; f32, f64, i32, f16, bf16:
// halves are added in float and rounded once per addition). y may be x.
void all_reduce_sum(const void* x, void* y, int64_t count, DType dtype, std::string_view what);
// y = the processes' x, each `bytes` long, one after the other in process order.
void all_gather(const void* x, void* y, int64_t bytes, std::string_view what);
// y = this process's block (block `index()`, `count` elements) of the sum of every process's x,
// which holds count() such blocks one after the other.
void reduce_scatter_sum(const void* x, void* y, int64_t count, DType dtype, std::string_view what);
// The same three exchanges started, not waited for: each returns a ticket that wait() takes once.
// The buffers must stay as they are until then (the memory plan keeps them: collective_done reads
// the operand). progress() lets started exchanges advance (MPI moves data only inside its calls):
// the executable calls it between kernels while any is in flight.
int64_t start_all_reduce_sum(const void* x, void* y, int64_t count, DType dtype, std::string_view what);
int64_t start_all_gather(const void* x, void* y, int64_t bytes, std::string_view what);
int64_t start_reduce_scatter_sum(const void* x, void* y, int64_t count, DType dtype, std::string_view what);
void wait(int64_t ticket);
void progress();
// Exchanges started and not yet waited for.
int64_t in_flight();

// The exchanges above as the CPU backend hands them to the executable (runtime/backend.h): start is
// the started form, wait blocks the caller.
Exchanges& exchanges();

// An exchange over another transport (the CUDA backend's NCCL) failed: a peer is gone or out of
// step, so this process leaves without MPI_Finalize (which would wait for it), as after an MPI
// exchange that failed.
void abandon();
// The UNAVAILABLE error of an exchange that waited the timeout for the others (after abandon()),
// whatever its transport.
[[noreturn]] void time_out(std::string_view what);

// Every process's `text`, in process order (for checks that the processes agree).
std::vector<std::string> all_gather_text(const std::string& text, std::string_view what);

}  // namespace ferry::runtime::processes
