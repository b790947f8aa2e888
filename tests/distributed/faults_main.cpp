// Faults between processes, each a mode of this program run under `mpirun -np 2` by CTest
// (distributed.fault_*). Every process runs the step once with the others, then:
//   stalled_peer        process 1 stops taking part (alive, never in the second step): process 0
//                       fails with UNAVAILABLE naming the collective within the timeout (2 s
//                       here) instead of waiting for ever;
//   killed_peer         process 1 is killed (SIGKILL) before the second step: process 0 fails
//                       the same way (mpirun must be told not to kill the job itself:
//                       --mca orte_abort_on_non_zero_status 0), never hangs;
//   different_programs  process 1 compiled the step for an argument of another shape: both are
//                       refused at the first call, naming the argument that differs.
// Each process prints what it got and exits 0 only where that is what its mode expects, so
// mpirun's status is the test's for different_programs; a process that failed an exchange leaves
// without MPI_Finalize (runtime/process_group.cpp), so for the other two CTest reads process 0's
// line instead.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "ferry/ferry.h"

namespace fy = ferry;

namespace {

struct Outcome {
  bool ran = false;
  fy::ErrorCode code = fy::ErrorCode::internal;
  std::string message;
  double seconds = 0;
};

Outcome call(const fy::Compiled& c, const fy::Array& x) {
  const auto start = std::chrono::steady_clock::now();
  Outcome o;
  try {
    c.run({x});
    o.ran = true;
  } catch (const fy::Error& e) {
    o.code = e.code();
    o.message = e.what();
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  fy::distributed::initialize("data", /*timeout_seconds=*/2.0);
  const int me = fy::distributed::process_index();
  const int64_t size = mode == "different_programs" && me == 1 ? 5 : 4;
  auto step = fy::jit([](fy::Tensor x) { return fy::psum(x * 2.0, "data"); });
  const fy::Compiled c = step.lower(fy::ShapeDtype{{size}}).compile();
  const fy::Array x = fy::ones({size});
  bool ok = false;
  Outcome first = call(c, x);
  if (mode == "different_programs") {
    std::printf("process %d: %s\n", me, first.message.c_str());
    ok = first.code == fy::ErrorCode::invalid_argument &&
         contains(first.message, "argument 0 is f32[4] on process 0 and f32[5] on process 1");
  } else if (first.ran) {
    if (me == 1) {
      if (mode == "killed_peer") std::raise(SIGKILL);
      std::this_thread::sleep_for(std::chrono::seconds(4));  // alive, but never in the second step
      return 0;
    }
    Outcome second = call(c, x);
    std::printf("process %d: %s (after %.1f s)\n", me, second.ran ? "ran" : second.message.c_str(), second.seconds);
    ok = !second.ran && second.code == fy::ErrorCode::unavailable && contains(second.message, "psum") &&
         second.seconds >= 1.5 && second.seconds < 30;
  } else {
    std::printf("process %d: the first step failed: %s\n", me, first.message.c_str());
  }
  std::fflush(stdout);
  return ok ? 0 : 1;
}
