// Private to the CUDA backend: its exchanges with the other processes (runtime/backend.h's
// Exchanges) over NCCL, built where CMake finds NCCL and MPI (FERRY_HAS_NCCL).
//
// One communicator for the process group, made at the first exchange (every process runs the same
// program, so every one makes it at the same point): process 0 draws NCCL's id, the process group
// (MPI, runtime/process_group.h) carries it to the others, and each joins with its process index
// and count, on the GPU the backend chose for it (backend.cpp: one per process on a machine, as
// NCCL requires).
//
// Exchanges run on a stream of their own: each waits (through an event) for the compute stream's
// work before it, and wait(ticket) makes the compute stream wait for the event recorded after it.
// Nothing waits for a peer unwatched: the communicator is non-blocking (a call that would wait
// returns, and is polled), and every wait of the host for the GPU goes through wait_for_stream,
// which polls while exchanges are in flight. An exchange that has run for the process group's
// timeout (its operand ready, the exchanges before it done) or that NCCL reports failed aborts
// the communicator and fails with UNAVAILABLE naming it; every later exchange fails the same way.
#pragma once

#include <string>

#include "runtime/backend.h"

namespace ferry::runtime::cuda {

// NCCL's exchanges (one for the process, made on first use); nullptr where this build has no
// NCCL, with `why` (what compiling a program with collectives for "cuda" reports).
Exchanges* nccl_exchanges(std::string* why);

// The host waits until `stream`'s work is done and returns its status (cudaStreamSynchronize's
// cudaError_t; this header leaves CUDA's out, so that host-side tests can include it):
// while exchanges are in flight by polling, watching them (UNAVAILABLE as above), and waiting for
// the exchanges' stream too (an exchange started and never waited for, when a run stops early,
// must not outlive the buffers it writes).
int wait_for_stream(Stream stream);

}  // namespace ferry::runtime::cuda
