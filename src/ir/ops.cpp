#include "ir/ops.h"

#include <array>

namespace ferry::ir {
namespace {

constexpr int32_t in(int i) { return int32_t{1} << i; }
#define IN(i) in(i)
#define T(t) k##t

const std::array<OpInfo, kNumOps> kTable = {{
#define FERRY_OP(id, name, inputs, params, in_place, traits) \
  {static_cast<Primitive>(detail::OpId::id), name, inputs, params{}, in_place, static_cast<uint32_t>(traits)},
#define FERRY_COMPILER_OP(id, name, inputs, params, in_place, traits) \
  {static_cast<Primitive>(detail::OpId::id), name, inputs, params{}, in_place, static_cast<uint32_t>(traits) | kCompilerOnly},
#include "ir/ops.def"
#undef FERRY_OP
#undef FERRY_COMPILER_OP
}};

#undef IN
#undef T

}  // namespace

const OpInfo& op_info(Primitive p) { return kTable.at(static_cast<size_t>(p)); }

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& o : kTable)
    if (o.name == name) return &o;
  return nullptr;
}

}  // namespace ferry::ir

namespace ferry {
std::string_view primitive_name(Primitive p) { return ir::op_info(p).name; }
}  // namespace ferry
