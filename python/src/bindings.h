// The nanobind module ferry._ferry, one file per area as MLX's bindings are: errors.cpp (ferry::Error
// as ferry.Error), array.cpp (NumPy in and out without copies), ops.cpp (Tensor and its operations),
// transforms.cpp (vjp, checkpoint, scan, cond, while, custom_vjp), compiled.cpp (tracing, Lowered,
// Compiled and what they report), distributed.cpp (the processes and the collectives). Each
// defines one init function that module.cpp calls.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "ferry/ferry.h"

namespace ferry::python {

namespace nb = nanobind;

void init_errors(nb::module_& m);
void init_array(nb::module_& m);
void init_ops(nb::module_& m);
void init_transforms(nb::module_& m);
void init_compiled(nb::module_& m);
void init_distributed(nb::module_& m);

// "f32", "bf16", "bool", ... <-> DType; an unknown name is INVALID_ARGUMENT.
DType parse_dtype(const std::string& name);
MemoryKind parse_kind(const std::string& name);

// A Python callable taking and returning lists of Tensors, as the C++ transforms take them. What it
// raises travels through ferry's C++ frames as nb::python_error and comes out unchanged.
using TensorFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
TensorFn tensor_fn(nb::callable fn, const char* what);

}  // namespace ferry::python
