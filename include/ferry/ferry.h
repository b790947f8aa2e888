// ferry: trace array programs, differentiate them, and compile training steps that fit in device
// memory. This header includes the whole public API.
#pragma once

#include "ferry/array.h"
#include "ferry/error.h"
#include "ferry/jit.h"
#include "ferry/primitive.h"
#include "ferry/tensor.h"
#include "ferry/types.h"
