// Arrays over memory ferry does not own: a host buffer another library allocated (a NumPy array's
// data, for the Python package), read by compiled programs without a copy.
#pragma once

#include <memory>

#include "ferry/array.h"

namespace ferry {

// An Array of dtype[shape]{device} on the "cpu" backend whose bytes are `data`, which must hold
// num_elements(shape) * dtype_size(dtype) bytes (row-major) and stay valid while `owner` lives: the
// Array keeps `owner` until its last copy is gone, and never frees `data`. Programs read it as
// any argument; it must not be donated (donate_argnums), since an output would then take over
// bytes that no ferry memory resource handed out. A bool array's bytes must be 0 or 1, as for
// Array::from_bytes (INVALID_ARGUMENT otherwise), and so must its shape and dtype pass the same
// checks.
Array borrow(void* data, DType dtype, Shape shape, std::shared_ptr<const void> owner);

}  // namespace ferry
