// ferry._ferry: the extension module behind the ferry package (see bindings.h for its parts).
#include "bindings.h"

NB_MODULE(_ferry, m) {
  // Programs kept by jit caches (and the Python callables their traces captured) may still be alive
  // when the interpreter exits; that is not a leak worth a message at every exit.
  nanobind::set_leak_warnings(false);
  m.doc() = "ferry's C++ library: tracing, differentiation, checkpoint policies, compilation and runs";
  ferry::python::init_errors(m);
  ferry::python::init_array(m);
  ferry::python::init_ops(m);
  ferry::python::init_transforms(m);
  ferry::python::init_compiled(m);
  ferry::python::init_distributed(m);
}
