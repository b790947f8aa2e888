// More than one process, named as in JAX (jax.distributed): initialize() joins the processes a
// launcher (mpirun) started, and process_index()/process_count() say which one this is and how many
// there are. The processes form one axis, named "data" unless initialize() is given another name.
// Open MPI is the transport on the CPU; a build without MPI has these functions and refuses
// initialize() with UNIMPLEMENTED.
//
// Collectives on Tensors, as jax.lax names and defines them (psum, pmean, all_gather, psum_scatter,
// axis_index), name the axis; every process must run the same compiled program, and each call of
// it exchanges data with the others. A process that stops taking part makes the others fail with
// UNAVAILABLE within the timeout, never hang; processes that compiled different programs are told
// so, naming what differs, at the program's first call.
#pragma once

#include <string>
#include <vector>

#include "ferry/tensor.h"

namespace ferry {

// The sum of x over the processes of the axis (jax.lax.psum); every process gets it. Its VJP is
// psum of the cotangent, as under jax.pmap.
Tensor psum(const Tensor& x, const std::string& axis_name);
std::vector<Tensor> psum(const std::vector<Tensor>& xs, const std::string& axis_name);
// psum divided by the number of processes (jax.lax.pmean); floating-point dtypes only. Averaging
// the gradients of each process's batch is data parallelism.
Tensor pmean(const Tensor& x, const std::string& axis_name);
std::vector<Tensor> pmean(const std::vector<Tensor>& xs, const std::string& axis_name);
// Every process's x (jax.lax.all_gather): stacked along a new dimension `axis` of size
// process_count(), or with `tiled` concatenated along the existing dimension `axis`. Its VJP is
// psum_scatter of the cotangent.
Tensor all_gather(const Tensor& x, const std::string& axis_name, int64_t axis = 0, bool tiled = false);
// The sum over the processes, of which each keeps its own part along `scatter_dimension`
// (jax.lax.psum_scatter): that dimension's size must be process_count() and goes, or with `tiled`
// be a multiple of it and is divided by it. Its VJP is all_gather of the cotangent.
Tensor psum_scatter(const Tensor& x, const std::string& axis_name, int64_t scatter_dimension = 0, bool tiled = false);
// This process's index along the axis, an i32 scalar (jax.lax.axis_index).
Tensor axis_index(const std::string& axis_name);

}  // namespace ferry

namespace ferry::distributed {

// Joins the processes of this launch. INVALID_ARGUMENT where no launcher started this process (it
// says how to launch one) or where it was already called; UNIMPLEMENTED in a build without MPI.
// Called once per process, before any other MPI use; the processes leave together at exit.
// `timeout_seconds` bounds every wait for the other processes (a collective, the check that they
// compiled the same program): past it the wait fails with UNAVAILABLE.
void initialize(const std::string& axis_name = "data", double timeout_seconds = 300);

// Whether initialize() has been called in this process.
bool is_initialized();

// This process's index in [0, process_count()); 0 before initialize().
int process_index();

// The number of processes; 1 before initialize().
int process_count();

// The name of the axis over all processes ("data" unless initialize() was given another).
std::string axis_name();

}  // namespace ferry::distributed
