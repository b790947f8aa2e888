// More than one process, named as in JAX (jax.distributed): initialize() joins the processes a
// launcher (mpirun) started, and process_index()/process_count() say which one this is and how many
// there are. The processes form one axis, named "data" unless initialize() is given another name.
// Open MPI is the transport on the CPU; a build without MPI has these functions and refuses
// initialize() with UNIMPLEMENTED. Collectives on Tensors are not here yet (docs/notes/issue29_plan.md).
#pragma once

#include <string>

namespace ferry::distributed {

// Joins the processes of this launch. INVALID_ARGUMENT where no launcher started this process (it
// says how to launch one) or where it was already called; UNIMPLEMENTED in a build without MPI.
// Called once per process, before any other MPI use; the processes leave together at exit.
void initialize(const std::string& axis_name = "data");

// Whether initialize() has been called in this process.
bool is_initialized();

// This process's index in [0, process_count()); 0 before initialize().
int process_index();

// The number of processes; 1 before initialize().
int process_count();

// The name of the axis over all processes ("data" unless initialize() was given another).
std::string axis_name();

}  // namespace ferry::distributed
