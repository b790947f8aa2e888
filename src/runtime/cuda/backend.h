// Private to the CUDA backend: what its kernels need from it.
#pragma once

#include <string>

#include "runtime/backend.h"

namespace ferry::runtime::cuda {

// The CUDA backend, made on first use; null (with `why`) where no GPU can be used here.
Backend* backend(std::string* why);

// The backend's cuBLAS handle (a cublasHandle_t); kernels set its stream and workspace per call.
void* cublas_handle();

}  // namespace ferry::runtime::cuda
