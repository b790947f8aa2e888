// device_put, and the kernel table as a whole.
#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

TEST(KernelTable, EveryPrimitiveHasACpuKernel) {
  for (int i = 0; i < kNumPrimitives; ++i)
    EXPECT_NE(runtime::cpu::kernel(static_cast<Primitive>(i)), nullptr) << "primitive #" << i;
}

TEST(DevicePutKernel, CopiesEveryDtypeExactly) {
  for (DType d : all_dtypes())
    for (const Shape& s : {Shape{}, Shape{7}, Shape{2, 0}, Shape{3, 4, 5}}) {
      Buffer x = random_buffer(d, s);
      Buffer y = run1(Primitive::device_put, ir::DevicePutParams{MemoryKind::pinned_host}, {&x}, d, s);
      EXPECT_TRUE(y.same_bytes(x)) << name(d) << shape_string(s);
    }
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
