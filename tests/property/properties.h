// The differential properties every random program must have, checked without GoogleTest
// assertions so that the shrinker can ask "does this smaller program still fail?".
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "property/random_program.h"

namespace ferry::property {

struct Failure {
  std::string property;  // which property broke, e.g. "gradients equal the program without checkpoints"
  std::string message;
};

// Gradients are taken of the program's loss with respect to every argument (random f64 values from
// the program's seed). Checked, in order: lowering; the lowered text round-trips through
// parse_program; after every compiler pass the program verifies and its text round-trips; the
// compiled text round-trips; the measured device and host high-water marks equal the planned
// peaks; the program parsed back from text computes bit-identical gradients; and the gradients
// equal those of the same program with every checkpoint inlined, within kGradientTolerance of the
// largest gradient entry (at least 1) of each argument, since recomputation may reorder the sums
// of cotangents. Then the same for second-order gradients (the gradient of the sum of the
// gradients), with and without checkpoints. Returns the first property that fails.
// `stats`, if given, counts what the checked programs exercised.
struct CheckStats {
  int programs = 0;
  int bit_identical = 0;  // gradients identical to the last bit with and without checkpoints
  int offloading = 0;     // compiled programs with host temporaries (something was offloaded)
  int temporaries_in_outputs = 0;  // compiled programs with device temporaries in output allocations
};
std::optional<Failure> check_properties(const RandomProgram& p, CheckStats* stats = nullptr);

inline constexpr double kGradientTolerance = 1e-12;
// Second order where the program rounds through f32 (see properties.cpp).
inline constexpr double kF32GradientTolerance = 1e-5;

// The smallest program of the same seed family that still fails `fails`: first the smallest size
// that fails, then ops removed one at a time (a removed op's uses take an earlier value of the same
// shape) while it still fails. At most `max_checks` calls of `fails`.
RandomProgram shrink(const RandomProgram& failing, const std::function<bool(const RandomProgram&)>& fails,
                     int max_checks = 400);

}  // namespace ferry::property
