// ferry: trace array programs, differentiate them, and compile training steps that fit in device
// memory. This header includes the whole public API.
#pragma once

#include "ferry/array.h"
#include "ferry/autodiff.h"
#include "ferry/calibrate.h"
#include "ferry/checkpoint.h"
#include "ferry/control_flow.h"
#include "ferry/custom_vjp.h"
#include "ferry/error.h"
#include "ferry/explain.h"
#include "ferry/gather.h"
#include "ferry/jit.h"
#include "ferry/machine.h"
#include "ferry/nn.h"
#include "ferry/optim.h"
#include "ferry/primitive.h"
#include "ferry/random.h"
#include "ferry/safetensors.h"
#include "ferry/scan.h"
#include "ferry/tensor.h"
#include "ferry/tree.h"
#include "ferry/types.h"
