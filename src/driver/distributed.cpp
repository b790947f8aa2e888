// ferry/distributed.h's process functions: the runtime's process group (runtime/process_group.h,
// over MPI) joined, and the axis over all processes bound for tracing collectives.
#include "ferry/distributed.h"

#include "ferry/error.h"
#include "runtime/process_group.h"
#include "trace/process_axis.h"

namespace ferry::distributed {
namespace {

std::string& axis() {
  static std::string name = "data";
  return name;
}

}  // namespace

void initialize(const std::string& axis_name, double timeout_seconds) {
  if (axis_name.empty()) throw Error(ErrorCode::invalid_argument, "distributed::initialize: the axis name is empty");
  runtime::processes::join(timeout_seconds);
  axis() = axis_name;
  detail::bind_process_axis(axis_name, runtime::processes::count(), runtime::processes::index());
}

bool is_initialized() { return runtime::processes::joined(); }
int process_index() { return runtime::processes::index(); }
int process_count() { return runtime::processes::count(); }
std::string axis_name() { return axis(); }

}  // namespace ferry::distributed
