// device_put, and the kernel table as a whole.
#include "prims/registry.h"
#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

// Primitives with bodies and the asynchronous copies are run by the executable itself; every other
// one has a kernel, and so does fused (its body is the kernel's program, not a nested one).
TEST(KernelTable, EveryPrimitiveWithoutABodyHasACpuKernel) {
  for (int i = 0; i < ir::kNumOps; ++i) {
    auto p = static_cast<Primitive>(i);
    if ((prims::info(p).body_shape_rule != nullptr && p != ir::op::fused) || ir::has(p, ir::kHostOnly))
      EXPECT_EQ(runtime::cpu::kernel(p), nullptr) << primitive_name(p);
    else EXPECT_NE(runtime::cpu::kernel(p), nullptr) << "primitive #" << i;
  }
}

TEST(DevicePutKernel, CopiesEveryDtypeExactly) {
  for (DType d : all_dtypes())
    for (const Shape& s : {Shape{}, Shape{7}, Shape{2, 0}, Shape{3, 4, 5}}) {
      Buffer x = random_buffer(d, s);
      Buffer y = run1(Primitive::device_put, ir::DevicePutParams{MemoryKind::pinned_host}, {&x}, d, s);
      EXPECT_TRUE(y.same_bytes(x)) << name(d) << shape_string(s);
    }
}

// The runtime may hand out no storage at all for an empty array.
TEST(KernelChecks, EmptyBuffersMayBeNull) {
  using P = Primitive;
  const ir::Type e{DType::f32, {3, 0}}, et{DType::f32, {0, 3}}, e_i32{DType::i32, {3, 0}};
  const ir::Type eb{DType::boolean, {3, 0}}, e_sum{DType::f32, {0}}, e_cat{DType::f32, {3, 0}};
  const ir::Type k0{DType::f32, {3, 0}}, k0r{DType::f32, {0, 2}}, k0out{DType::f32, {3, 2}};
  struct Case {
    P p;
    ir::Params params;
    std::vector<const ir::Type*> ins, outs;
  };
  const std::vector<Case> cases{
      {P::neg, ir::NoParams{}, {&e}, {&e}},
      {P::add, ir::NoParams{}, {&e, &e}, {&e}},
      {P::lt, ir::NoParams{}, {&e, &e}, {&eb}},
      {P::select, ir::NoParams{}, {&eb, &e, &e}, {&e}},
      {P::convert_element_type, ir::ConvertParams{DType::f32}, {&e}, {&e}},
      {P::convert_element_type, ir::ConvertParams{DType::i32}, {&e}, {&e_i32}},
      {P::iota, ir::IotaParams{DType::f32, {3, 0}, 0}, {}, {&e}},
      {P::constant, ir::ConstantParams{1, DType::f32, {3, 0}}, {}, {&e}},
      {P::broadcast_in_dim, ir::BroadcastInDimParams{{3, 0}, {1}}, {&e_sum}, {&e}},
      {P::reshape, ir::ReshapeParams{{0, 3}}, {&e}, {&et}},
      {P::transpose, ir::TransposeParams{{1, 0}}, {&e}, {&et}},
      {P::reduce_sum, ir::ReduceParams{{0}}, {&e}, {&e_sum}},
      {P::slice, ir::SliceParams{{0, 0}, {3, 0}, {}}, {&e}, {&e}},
      {P::concatenate, ir::ConcatenateParams{1}, {&e, &e}, {&e_cat}},
      {P::device_put, ir::DevicePutParams{MemoryKind::pinned_host}, {&e}, {&e}},
  };
  for (const Case& c : cases) {
    ir::Equation eq;
    eq.prim = c.p;
    eq.params = c.params;
    std::vector<runtime::ConstView> ins;
    std::vector<runtime::MutView> outs;
    for (const ir::Type* t : c.ins) ins.push_back({nullptr, t});
    for (const ir::Type* t : c.outs) outs.push_back({nullptr, t});
    runtime::Workspace none;  // empty operands need no scratch
    EXPECT_NO_THROW(runtime::cpu::kernel(c.p)(eq, ins, outs, none, {})) << primitive_name(c.p);
  }
  // K = 0 with a nonempty result writes zeros.
  std::vector<float> out(6, 1.0f);
  ir::Equation eq;
  eq.prim = P::dot_general;
  eq.params = ir::DotGeneralParams{{{1}, {0}, {}, {}}};
  const runtime::ConstView ins[] = {{nullptr, &k0}, {nullptr, &k0r}};
  const runtime::MutView outs[] = {{out.data(), &k0out}};
  runtime::Workspace none;
  runtime::cpu::kernel(P::dot_general)(eq, std::span<const runtime::ConstView>(ins),
                                       std::span<const runtime::MutView>(outs), none, {});
  EXPECT_EQ(out, std::vector<float>(6, 0.0f));
}

TEST(KernelChecks, MismatchedBuffersAreInternalErrorsNotOverruns) {
  // A result smaller than the operand: the kernel refuses instead of writing past it.
  Buffer x = random_buffer(DType::f32, {4, 5});
  try {
    run1(Primitive::transpose, ir::TransposeParams{{1, 0}}, {&x}, DType::f32, {5, 3});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal);
    EXPECT_NE(e.message().find("transpose"), std::string::npos);
  }
  EXPECT_THROW(run1(Primitive::add, ir::NoParams{}, {&x, &x}, DType::f32, {3}), Error);
  EXPECT_THROW(run1(Primitive::reduce_sum, ir::TransposeParams{{0}}, {&x}, DType::f32, {5}), Error);
}

}  // namespace
}  // namespace ferry::kernel_test
