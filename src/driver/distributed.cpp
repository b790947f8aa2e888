// The process group behind ferry/distributed.h. With MPI (FERRY_HAS_MPI) initialize() calls
// MPI_Init_thread once and MPI_Finalize runs at exit; errors on the world communicator return
// instead of aborting, so that a failing peer becomes a ferry::Error rather than a killed process.
#include "ferry/distributed.h"

#include <cstdlib>
#include <mutex>

#include "ferry/error.h"

#ifdef FERRY_HAS_MPI
#include <mpi.h>
#endif

namespace ferry::distributed {
namespace {

struct Group {
  std::mutex mu;
  bool initialized = false;
  int index = 0, count = 1;
  std::string axis = "data";
};

Group& group() {
  static Group g;
  return g;
}

#ifdef FERRY_HAS_MPI
// The environment variables a launcher sets for each process it starts: Open MPI's mpirun, PMIx
// (Open MPI 4+, Slurm's srun --mpi=pmix) and PMI (MPICH's hydra, srun --mpi=pmi2).
bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}
#endif

}  // namespace

void initialize(const std::string& axis_name) {
  Group& g = group();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.initialized) throw Error(ErrorCode::invalid_argument, "distributed::initialize: already called in this process");
  if (axis_name.empty()) throw Error(ErrorCode::invalid_argument, "distributed::initialize: the axis name is empty");
#ifdef FERRY_HAS_MPI
  if (!launched())
    throw Error(ErrorCode::invalid_argument,
                "distributed::initialize: this process was not started by a launcher (no OMPI_COMM_WORLD_SIZE, "
                "PMIX_RANK or PMI_SIZE in its environment); start every process with one, e.g. "
                "`mpirun -np 2 PROGRAM ARGS...` (as root add --allow-run-as-root; with fewer cores than "
                "processes add --oversubscribe)");
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      throw Error(ErrorCode::invalid_argument,
                  "distributed::initialize: MPI_Init_thread failed: the launcher's environment does not let this "
                  "process join its peers");
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g.index);
  MPI_Comm_size(MPI_COMM_WORLD, &g.count);
  g.axis = axis_name;
  g.initialized = true;
#else
  throw Error(ErrorCode::unimplemented,
              "distributed::initialize: this ferry was built without MPI (install Debian's libopenmpi-dev and "
              "openmpi-bin, then configure again: CMake finds MPI and builds it in)");
#endif
}

bool is_initialized() {
  Group& g = group();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.initialized;
}

int process_index() {
  Group& g = group();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.index;
}

int process_count() {
  Group& g = group();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.count;
}

std::string axis_name() {
  Group& g = group();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.axis;
}

}  // namespace ferry::distributed
