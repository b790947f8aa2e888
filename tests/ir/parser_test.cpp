// The parser on well-formed text: free numbering, whitespace and comments, and what it builds.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "ferry/error.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace ferry::ir {
namespace {

TEST(Parser, RenumbersInDefinitionOrder) {
  const char* text = R"(program @main(%10: f32[2], %3: f32[2]) {
  %7 = add %3, %10 : f32[2]
  %0 = neg %7 : f32[2]
  return %0, %10
})";
  auto p = parse(text);
  ASSERT_EQ(p->values.size(), 4u);
  EXPECT_EQ(p->inputs, (std::vector<ValueId>{0, 1}));
  ASSERT_EQ(p->equations.size(), 2u);
  EXPECT_EQ(p->equations[0].prim, Primitive::add);
  EXPECT_EQ(p->equations[0].inputs, (std::vector<ValueId>{1, 0}));
  EXPECT_EQ(p->equations[0].outputs, (std::vector<ValueId>{2}));
  EXPECT_EQ(p->equations[1].inputs, (std::vector<ValueId>{2}));
  EXPECT_EQ(p->outputs, (std::vector<ValueId>{3, 0}));
  EXPECT_EQ(print(*p),
            "program @main(%0: f32[2], %1: f32[2]) {\n"
            "  %2 = add %1, %0 : f32[2]\n"
            "  %3 = neg %2 : f32[2]\n"
            "  return %3, %0\n"
            "}\n");
}

TEST(Parser, FreeWhitespaceCommentsAndExplicitDevice) {
  const char* text =
      "// a leading comment\n"
      "program@f ( %0 :f32 [ 2 , 3 ] { device } ,%1:i32[]{ pinned_host } )// after the header\n"
      "{ %2=reduce_sum [ axes = [ 0 , 1 ] ]%0:f32[]@\"n\"// trailing\n"
      "%3 = convert_element_type[new_dtype=f32]%1:f32[]{unpinned_host} return %2 ,%3}  \n// done\n";
  auto p = parse(text);
  EXPECT_EQ(p->name, "f");
  EXPECT_EQ(p->values[0].kind, MemoryKind::device);
  EXPECT_EQ(p->values[1].kind, MemoryKind::pinned_host);
  EXPECT_EQ(p->values[3].kind, MemoryKind::unpinned_host);
  EXPECT_EQ(print(*p),
            "program @f(%0: f32[2,3], %1: i32[]{pinned_host}) {\n"
            "  %2 = reduce_sum[axes=[0,1]] %0 : f32[] @\"n\"\n"
            "  %3 = convert_element_type[new_dtype=f32] %1 : f32[]{unpinned_host}\n"
            "  return %2, %3\n"
            "}\n");
}

TEST(Parser, BuildsTypedParamsAndNames) {
  auto p = parse(R"(program @main(%0: f32[4,3], %1: f32[3,5]) {
  %2 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %0, %1 : f32[4,5] @"a \"dot\" \\ here"
  %3 = slice[start_indices=[0,1], limit_indices=[4,5], strides=[2,1]] %2 : f32[2,4]
  %4 = device_put[dst=pinned_host] %3 : f32[2,4]{pinned_host}
  %5 = iota[dtype=i32, shape=[2,4], dimension=1] : i32[2,4]
  return %4, %5
})");
  ASSERT_EQ(p->equations.size(), 4u);
  const auto& dot = std::get<DotGeneralParams>(p->equations[0].params);
  EXPECT_EQ(dot.dims.lhs_contracting, (Dims{1}));
  EXPECT_EQ(dot.dims.rhs_contracting, (Dims{0}));
  EXPECT_TRUE(dot.dims.lhs_batch.empty());
  EXPECT_EQ(p->equations[0].name, "a \"dot\" \\ here");
  EXPECT_EQ(std::get<SliceParams>(p->equations[1].params), (SliceParams{{0, 1}, {4, 5}, {2, 1}}));
  EXPECT_EQ(std::get<DevicePutParams>(p->equations[2].params).dst, MemoryKind::pinned_host);
  EXPECT_EQ(std::get<IotaParams>(p->equations[3].params), (IotaParams{DType::i32, {2, 4}, 1}));
  EXPECT_EQ(p->type(4), (Type{DType::f32, {2, 4}, MemoryKind::pinned_host}));
}

TEST(Parser, AttributesInAnyOrder) {
  auto p = parse(
      "program @main() { %0 = constant[shape=[2], value=1, dtype=bf16] : bf16[2]\n"
      "  %1 = iota[dimension=0, shape=[3], dtype=i32] : i32[3] return %0 }");
  EXPECT_EQ(std::get<ConstantParams>(p->equations[0].params), (ConstantParams{1.0, DType::bf16, {2}}));
  EXPECT_NE(print(*p).find("constant[value=1, dtype=bf16, shape=[2]]"), std::string::npos);
}

TEST(Parser, DoublesReadBitExactly) {
  struct Case {
    const char* text;
    double value;
  };
  const Case cases[] = {
      {"2", 2.0},
      {"2.5", 2.5},
      {"1e-07", 1e-7},
      {"1E+300", 1e300},
      {"-0", -0.0},
      {"0.1", 0.1},
      {"inf", INFINITY},
      {"-inf", -INFINITY},
      {"nan", std::numeric_limits<double>::quiet_NaN()},
      {"-nan", -std::numeric_limits<double>::quiet_NaN()},
      {"5e-324", 5e-324},
      {"1.7976931348623157e+308", 1.7976931348623157e308},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto p = parse(std::string("program @main() { %0 = constant[value=") + c.text +
                   ", dtype=f64, shape=[]] : f64[] return %0 }");
    double v = std::get<ConstantParams>(p->equations[0].params).value;
    EXPECT_EQ(std::bit_cast<uint64_t>(v), std::bit_cast<uint64_t>(c.value));
  }
}

TEST(Parser, NamesMayHoldAnyBytes) {
  std::string text = std::string("program @main(%0: f32[]) { %1 = neg %0 : f32[] @\"a\nb") + '\0' +
                     "c\xff\t//x\" return %1 }";
  auto p = parse(text);
  EXPECT_EQ(p->equations[0].name, std::string("a\nb\0c\xff\t//x", 10));
  EXPECT_EQ(print(*parse(print(*p))), print(*p));
}

TEST(Parser, SubprogramsNumberTheirOwnValues) {
  auto p = parse(R"(program @main(%5: f32[2]) {
  %6 = sin %5 : f32[2] {
    program @a(%100: f32[2]) { return %100 }
    program @b(%5: f32[2], %6: f32[]) {
      %9 = neg %5 : f32[2] { program @c() { return } }
      return %9
    }
  }
  return %6
})");
  ASSERT_EQ(p->equations.size(), 1u);
  const auto& subs = p->equations[0].subprograms;
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[0]->name, "a");
  EXPECT_EQ(subs[0]->inputs, (std::vector<ValueId>{0}));
  EXPECT_EQ(subs[0]->outputs, (std::vector<ValueId>{0}));
  EXPECT_EQ(subs[1]->values.size(), 3u);
  EXPECT_EQ(subs[1]->equations[0].outputs, (std::vector<ValueId>{2}));
  ASSERT_EQ(subs[1]->equations[0].subprograms.size(), 1u);
  EXPECT_EQ(subs[1]->equations[0].subprograms[0]->name, "c");
  EXPECT_TRUE(subs[1]->equations[0].subprograms[0]->values.empty());
}

TEST(Parser, TypeSizeLimits) {
  // 2^62 bytes exactly is allowed; zero-size dimensions are fine.
  auto p = parse("program @main(%0: bool[4611686018427387904], %1: f32[1073741824,1073741824], %2: f32[0,7,0]) "
                 "{ return }");
  EXPECT_EQ(p->type(0).shape, (Shape{int64_t{1} << 62}));
  EXPECT_EQ(p->type(2).shape, (Shape{0, 7, 0}));
}

// `levels` programs, each holding the next as the subprogram of its one equation.
std::string nested(int levels) {
  std::string text;
  for (int i = 1; i < levels; ++i) text += "program @p() { %0 = iota[dtype=i32, shape=[], dimension=0] : i32[] {\n";
  text += "program @leaf() { return }\n";
  for (int i = 1; i < levels; ++i) text += "} return %0 }\n";
  return text;
}

TEST(Parser, NestingUpToTheLimit) {
  // The top program and 64 levels of subprograms below it parse; one more does not (see the
  // error tests).
  auto p = parse(nested(65));
  int depth = 0;
  for (const Program* q = p.get(); !q->equations.empty(); q = q->equations[0].subprograms[0].get()) ++depth;
  EXPECT_EQ(depth, 64);
  EXPECT_THROW(parse(nested(66)), Error);
}

}  // namespace
}  // namespace ferry::ir
