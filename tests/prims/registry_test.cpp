#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "ferry/primitive.h"
#include "prims/registry.h"

namespace ferry::prims {
namespace {

using P = Primitive;

// The enumerators of include/ferry/primitive.h that this layer defines, with their spelling.
const std::pair<P, std::string_view> kAll[] = {
    {P::neg, "neg"}, {P::exp, "exp"}, {P::log, "log"}, {P::sin, "sin"}, {P::cos, "cos"}, {P::tanh, "tanh"},
    {P::logistic, "logistic"}, {P::sqrt, "sqrt"}, {P::rsqrt, "rsqrt"}, {P::abs, "abs"}, {P::sign, "sign"},
    {P::add, "add"}, {P::sub, "sub"}, {P::mul, "mul"}, {P::div, "div"}, {P::max, "max"}, {P::min, "min"},
    {P::pow, "pow"}, {P::eq, "eq"}, {P::ne, "ne"}, {P::lt, "lt"}, {P::le, "le"}, {P::gt, "gt"}, {P::ge, "ge"},
    {P::select, "select"}, {P::convert_element_type, "convert_element_type"}, {P::iota, "iota"},
    {P::constant, "constant"}, {P::broadcast_in_dim, "broadcast_in_dim"}, {P::reshape, "reshape"},
    {P::transpose, "transpose"}, {P::reduce_sum, "reduce_sum"}, {P::reduce_max, "reduce_max"},
    {P::dot_general, "dot_general"}, {P::slice, "slice"}, {P::dynamic_slice, "dynamic_slice"},
    {P::dynamic_update_slice, "dynamic_update_slice"}, {P::concatenate, "concatenate"},
    {P::device_put, "device_put"},
};

TEST(Registry, EveryPrimitiveHasACompleteEntryWithItsName) {
  for (auto [p, name] : kAll) {
    const PrimitiveInfo& e = info(p);
    EXPECT_EQ(e.prim, p);
    EXPECT_EQ(e.name, name);
    EXPECT_EQ(name_of(p), name);
    EXPECT_EQ(primitive_name(p), name);
    EXPECT_EQ(find(name), &e) << name;
  }
  // Enumerators added after this list (control flow, later layers) still need complete entries.
  ASSERT_LE(std::size(kAll), static_cast<size_t>(ir::kNumOps));
  for (int i = 0; i < ir::kNumOps; ++i) {
    const PrimitiveInfo& e = info(static_cast<P>(i));
    EXPECT_EQ(static_cast<int>(e.prim), i);
    EXPECT_FALSE(e.name.empty()) << "primitive #" << i;
    // Exactly one of the plain and the body-aware rule, for both shape and cost.
    EXPECT_NE(e.shape_rule == nullptr, e.body_shape_rule == nullptr) << e.name;
    EXPECT_NE(e.cost_rule == nullptr, e.body_cost_rule == nullptr) << e.name;
    EXPECT_EQ(find(e.name), &e) << e.name;
  }
}

TEST(Registry, FindUnknownNameIsNull) {
  EXPECT_EQ(find("matmul"), nullptr);
  EXPECT_EQ(find(""), nullptr);
  EXPECT_EQ(find("ADD"), nullptr);
}

TEST(Registry, ArityAndParamsKind) {
  EXPECT_EQ(info(P::exp).num_inputs, 1);
  EXPECT_EQ(info(P::add).num_inputs, 2);
  EXPECT_EQ(info(P::select).num_inputs, 3);
  EXPECT_EQ(info(P::iota).num_inputs, 0);
  EXPECT_EQ(info(P::constant).num_inputs, 0);
  EXPECT_EQ(info(P::dot_general).num_inputs, 2);
  EXPECT_EQ(info(P::dynamic_slice).num_inputs, -1);
  EXPECT_EQ(info(P::dynamic_update_slice).num_inputs, -1);
  EXPECT_EQ(info(P::concatenate).num_inputs, -1);

  EXPECT_TRUE(std::holds_alternative<ir::NoParams>(info(P::add).params));
  EXPECT_TRUE(std::holds_alternative<ir::ConvertParams>(info(P::convert_element_type).params));
  EXPECT_TRUE(std::holds_alternative<ir::IotaParams>(info(P::iota).params));
  EXPECT_TRUE(std::holds_alternative<ir::ConstantParams>(info(P::constant).params));
  EXPECT_TRUE(std::holds_alternative<ir::BroadcastInDimParams>(info(P::broadcast_in_dim).params));
  EXPECT_TRUE(std::holds_alternative<ir::ReshapeParams>(info(P::reshape).params));
  EXPECT_TRUE(std::holds_alternative<ir::TransposeParams>(info(P::transpose).params));
  EXPECT_TRUE(std::holds_alternative<ir::ReduceParams>(info(P::reduce_sum).params));
  EXPECT_TRUE(std::holds_alternative<ir::ReduceParams>(info(P::reduce_max).params));
  EXPECT_TRUE(std::holds_alternative<ir::DotGeneralParams>(info(P::dot_general).params));
  EXPECT_TRUE(std::holds_alternative<ir::SliceParams>(info(P::slice).params));
  EXPECT_TRUE(std::holds_alternative<ir::DynamicSliceParams>(info(P::dynamic_slice).params));
  EXPECT_TRUE(std::holds_alternative<ir::NoParams>(info(P::dynamic_update_slice).params));
  EXPECT_TRUE(std::holds_alternative<ir::ConcatenateParams>(info(P::concatenate).params));
  EXPECT_TRUE(std::holds_alternative<ir::DevicePutParams>(info(P::device_put).params));
}

// Through the Equation/Program entry point the registry uses for the scheduler.
TEST(Registry, CostOfAnEquationUsesTheProgramTypes) {
  ir::Program p;
  ir::ValueId a = p.add_value({DType::f32, {2, 3}});
  ir::ValueId b = p.add_value({DType::f32, {3, 4}});
  ir::ValueId c = p.add_value({DType::f32, {2, 4}});
  ir::Equation eq;
  eq.prim = P::dot_general;
  eq.params = ir::DotGeneralParams{ir::DotDimensionNumbers{{1}, {0}, {}, {}}};
  eq.inputs = {a, b};
  eq.outputs = {c};
  Cost cost = prims::cost(eq, p);
  EXPECT_EQ(cost.flops, 48);
  EXPECT_EQ(cost.bytes_read, 72);
  EXPECT_EQ(cost.bytes_written, 32);
}

}  // namespace
}  // namespace ferry::prims
