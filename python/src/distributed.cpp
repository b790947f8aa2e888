// ferry.distributed and the collectives, as ferry/distributed.h has them: joining the processes a
// launcher (mpirun) started, which one this is, and psum / all_gather / psum_scatter / axis_index on
// Tensors (the JAX bridge converts jax.lax's collectives inside jax.shard_map to these).
#include <nanobind/stl/string.h>

#include "bindings.h"

namespace ferry::python {

void init_distributed(nb::module_& m) {
  m.def("initialize", [](const std::string& axis_name, double timeout_seconds) {
    distributed::initialize(axis_name, timeout_seconds);
  });
  m.def("is_initialized", [] { return distributed::is_initialized(); });
  m.def("process_index", [] { return distributed::process_index(); });
  m.def("process_count", [] { return distributed::process_count(); });
  m.def("axis_name", [] { return distributed::axis_name(); });

  using T = const Tensor&;
  m.def("psum", [](T x, const std::string& axis) { return psum(x, axis); });
  m.def("all_gather", [](T x, const std::string& axis, int64_t dimension, bool tiled) {
    return all_gather(x, axis, dimension, tiled);
  });
  m.def("psum_scatter", [](T x, const std::string& axis, int64_t dimension, bool tiled) {
    return psum_scatter(x, axis, dimension, tiled);
  });
  m.def("axis_index", [](const std::string& axis) { return axis_index(axis); });
}

}  // namespace ferry::python
