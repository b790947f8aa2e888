// The op table (ir/ops.def) as C++: each primitive's name, operand count, parameter struct,
// in-place inputs and traits. The public enum ferry::Primitive holds the traceable primitives (in
// the table's order, generated from it); the compiler's own (copy_start, copy_done, fused) follow
// them and are named here, in ir::op.
#pragma once

#include <cstdint>
#include <string_view>

#include "ferry/primitive.h"
#include "ir/params.h"

namespace ferry::ir {

enum Trait : uint32_t {
  kUnary = 1u << 0,
  kBinary = 1u << 1,
  kComparison = 1u << 2,
  kElementwise = 1u << 3,
  kScalarOperands = 1u << 4,
  kCommutative = 1u << 5,
  kFusible = 1u << 6,
  kFusedBool = 1u << 7,
  kFusedI32 = 1u << 8,
  kExpensive = 1u << 9,
  kHostOnly = 1u << 10,
  kBodies = 1u << 11,
  kCompilerOnly = 1u << 12,
  kTranscendental = 1u << 13,
  kCollective = 1u << 14,
  kAsyncStart = 1u << 15,
  kAsyncDone = 1u << 16,
};

struct OpInfo {
  Primitive prim;
  std::string_view name;
  int num_inputs = 0;  // -1: variadic
  Params params;       // the default value; its alternative is the struct this primitive takes
  int32_t in_place = 0;  // bit i: the one output may take input i's buffer where it dies there
  uint32_t traits = 0;
};

namespace detail {
enum class OpId : uint8_t {
#define FERRY_OP(id, ...) id,
#define FERRY_COMPILER_OP(id, ...) id,
#include "ir/ops.def"
#undef FERRY_OP
#undef FERRY_COMPILER_OP
  count_
};
}  // namespace detail

// Every primitive, the compiler's own included.
inline constexpr int kNumOps = static_cast<int>(detail::OpId::count_);

// The compiler's own primitives (never traced; ir::parse refuses them in user text).
namespace op {
#define FERRY_OP(id, ...)
#define FERRY_COMPILER_OP(id, ...) inline constexpr Primitive id = static_cast<Primitive>(detail::OpId::id);
#include "ir/ops.def"
#undef FERRY_OP
#undef FERRY_COMPILER_OP
}  // namespace op

// The generated public enum lists the traceable primitives in the table's order.
#define FERRY_OP(id, ...) static_assert(static_cast<int>(Primitive::id) == static_cast<int>(detail::OpId::id));
#define FERRY_COMPILER_OP(id, ...)
#include "ir/ops.def"
#undef FERRY_OP
#undef FERRY_COMPILER_OP
static_assert(kNumPrimitives + 7 == kNumOps, "the compiler's own primitives follow the traceable ones");

const OpInfo& op_info(Primitive p);
// nullptr when no primitive has that name.
const OpInfo* find_op(std::string_view name);
inline bool has(Primitive p, Trait t) { return (op_info(p).traits & t) != 0; }
inline std::string_view name_of(Primitive p) { return op_info(p).name; }
inline bool compiler_only(Primitive p) { return has(p, kCompilerOnly); }

}  // namespace ferry::ir
