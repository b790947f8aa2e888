#include "prims/verify.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include "ferry/error.h"

namespace ferry::ir {
namespace {

using prims::verify;  // with the primitives' shape rules

using ::testing::HasSubstr;

Type f32(Shape s, MemoryKind k = MemoryKind::device) { return Type{DType::f32, std::move(s), k}; }

Equation eqn(Primitive prim, std::vector<ValueId> in, std::vector<ValueId> out, Params params = NoParams{}) {
  Equation e;
  e.prim = prim;
  e.params = std::move(params);
  e.inputs = std::move(in);
  e.outputs = std::move(out);
  return e;
}

// x: f32[2,3], w: f32[3,4] -> sin(x) . w -> reduce_sum over both axes.
Program good_program() {
  Program p;
  p.name = "main";
  ValueId x = p.add_value(f32({2, 3}));
  ValueId w = p.add_value(f32({3, 4}));
  ValueId s = p.add_value(f32({2, 3}));
  ValueId d = p.add_value(f32({2, 4}));
  ValueId r = p.add_value(f32({}));
  p.inputs = {x, w};
  p.equations.push_back(eqn(Primitive::sin, {x}, {s}));
  p.equations.push_back(eqn(Primitive::dot_general, {s, w}, {d}, DotGeneralParams{{{1}, {0}, {}, {}}}));
  p.equations.push_back(eqn(Primitive::reduce_sum, {d}, {r}, ReduceParams{{0, 1}}));
  p.outputs = {r, d};
  return p;
}

// The message of the INVALID_ARGUMENT error verify must throw.
std::string rejected(const Program& p) {
  try {
    verify(p);
    ADD_FAILURE() << "verify accepted a malformed program";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    return e.message();
  }
  return "<accepted>";
}

TEST(Verifier, AcceptsAWellFormedProgram) {
  EXPECT_NO_THROW(verify(good_program()));
}

TEST(Verifier, AcceptsEmptyAndPassThroughPrograms) {
  Program empty;
  EXPECT_NO_THROW(verify(empty));
  Program pass;
  ValueId x = pass.add_value(f32({3}, MemoryKind::pinned_host));
  pass.inputs = {x};
  pass.outputs = {x, x};  // returning a value twice is fine
  EXPECT_NO_THROW(verify(pass));
}

TEST(Verifier, AcceptsValuesWithoutOperandsAndMemoryKinds) {
  Program p;
  ValueId c = p.add_value(Type{DType::i32, {4}});
  ValueId h = p.add_value(Type{DType::i32, {4}, MemoryKind::pinned_host});
  ValueId back = p.add_value(Type{DType::i32, {4}});
  p.equations.push_back(eqn(Primitive::iota, {}, {c}, IotaParams{DType::i32, {4}, 0}));
  p.equations.push_back(eqn(Primitive::device_put, {c}, {h}, DevicePutParams{MemoryKind::pinned_host}));
  p.equations.push_back(eqn(Primitive::device_put, {h}, {back}, DevicePutParams{MemoryKind::device}));
  p.outputs = {back};
  EXPECT_NO_THROW(verify(p));
}

TEST(Verifier, RejectsOperandIdOutOfRange) {
  Program p = good_program();
  p.equations[1].inputs[1] = 9;
  EXPECT_EQ(rejected(p), "program 'main': %3 = dot_general: operand 1 is %9, out of range (the program "
                         "has 5 values)");
  p.equations[1].inputs[1] = -1;
  EXPECT_THAT(rejected(p), HasSubstr("operand 1 is %-1, out of range"));
}

TEST(Verifier, RejectsUseBeforeDefinition) {
  Program p = good_program();
  std::swap(p.equations[0], p.equations[1]);  // dot reads sin's output before sin runs
  EXPECT_EQ(rejected(p), "program 'main': %2 = dot_general: operand 0 uses %2 before it is defined");
}

TEST(Verifier, RejectsUseOfAValueNothingDefines) {
  Program p = good_program();
  p.inputs = {0};  // w (%1) is no longer an input
  EXPECT_THAT(rejected(p), HasSubstr("%2 = dot_general: operand 1 uses %1 before it is defined"));
}

TEST(Verifier, RejectsDoubleDefinition) {
  Program p = good_program();
  p.equations[1].outputs = {2};  // dot redefines sin's output
  EXPECT_EQ(rejected(p), "program 'main': %3 = dot_general: output 0 defines %2 a second time (values are "
                         "assigned once)");

  Program q = good_program();
  q.inputs = {0, 0};
  EXPECT_THAT(rejected(q), HasSubstr("program 'main': input 1 defines %0 a second time"));

  Program r = good_program();
  r.equations[0].outputs = {0};  // sin writes over its own input
  EXPECT_THAT(rejected(r), HasSubstr("%2 = sin: output 0 defines %0 a second time"));
}

TEST(Verifier, RejectsBadProgramInputsAndOutputs) {
  Program p = good_program();
  p.inputs.push_back(5);
  EXPECT_EQ(rejected(p), "program 'main': input 2 is %5, out of range (the program has 5 values)");

  Program q = good_program();
  q.outputs = {4, 7};
  EXPECT_EQ(rejected(q), "program 'main': output 1 is %7, out of range (the program has 5 values)");

  Program r = good_program();
  r.add_value(f32({}));
  r.outputs = {5};
  EXPECT_EQ(rejected(r), "program 'main': output 0 is %5, which no input or equation defines");
}

TEST(Verifier, RejectsEquationOutputIdOutOfRange) {
  Program p = good_program();
  p.equations[2].outputs = {12};
  EXPECT_THAT(rejected(p), HasSubstr("%4 = reduce_sum: output 0 is %12, out of range"));
}

TEST(Verifier, RejectsDeclaredTypesThatDifferFromTheRule) {
  Program p = good_program();
  p.values[3] = f32({4, 2});  // dot's output declared with the wrong shape
  EXPECT_EQ(rejected(p), "program 'main': %3 = dot_general: declared output types (f32[4,2]) differ from "
                         "the inferred types (f32[2,4])");

  Program q = good_program();
  q.values[2] = Type{DType::f32, {2, 3}, MemoryKind::pinned_host};  // memory kinds count too
  EXPECT_THAT(rejected(q), HasSubstr("%2 = sin: declared output types (f32[2,3]{pinned_host}) differ from "
                                     "the inferred types (f32[2,3])"));
}

TEST(Verifier, RejectsWrongOutputCount) {
  Program p = good_program();
  ValueId extra = p.add_value(f32({2, 3}));
  p.equations[0].outputs.push_back(extra);
  EXPECT_EQ(rejected(p), "program 'main': %2, %3 = sin: declares 2 output(s) but sin produces 1");
  p.equations[0].outputs.clear();
  EXPECT_THAT(rejected(p), HasSubstr("declares 0 output(s) but sin produces 1"));
}

TEST(Verifier, WrapsShapeRuleErrorsWithTheEquation) {
  Program p = good_program();
  p.values[1] = f32({4, 4});
  EXPECT_EQ(rejected(p), "program 'main': %3 = dot_general: dot_general: contracting dimension sizes differ: "
                         "lhs dim 1 is 3, rhs dim 0 is 4 (operands: f32[2,3], f32[4,4])");

  Program q = good_program();
  q.equations[2].params = TransposeParams{{1, 0}};
  EXPECT_THAT(rejected(q), HasSubstr("%4 = reduce_sum: reduce_sum: parameters of the wrong kind"));

  Program r = good_program();
  r.equations[0].inputs = {0, 1};
  EXPECT_THAT(rejected(r), HasSubstr("%2 = sin: sin: takes 1 operand(s), got 2"));
}

TEST(Verifier, RejectsUnknownPrimitive) {
  Program p = good_program();
  p.equations[0].prim = static_cast<Primitive>(kNumOps + 3);
  EXPECT_THAT(rejected(p), HasSubstr(fmt::format("equation 0: unknown primitive #{}", kNumOps + 3)));
}

TEST(Verifier, RejectsBadValueTypes) {
  Program p = good_program();
  p.values[4] = f32({-1});
  EXPECT_EQ(rejected(p), "program 'main': value %4: type f32[-1] has a negative dimension size");

  Program q = good_program();
  q.add_value(f32({int64_t{1} << 31, int64_t{1} << 31}));  // 2^62 elements, 2^64 bytes
  EXPECT_EQ(rejected(q), "program 'main': value %5: type f32[2147483648,2147483648] is too large: more than 2^62 "
                         "bytes, counting each zero-size dimension as 1 (ferry's limit)");

  Program r = good_program();
  r.add_value(f32({int64_t{1} << 40, int64_t{1} << 40}));
  EXPECT_THAT(rejected(r), HasSubstr("is too large: more than 2^62 bytes"));
}

// A body that computes exp(x) + x on f32[3].
std::shared_ptr<Program> body(std::string name) {
  auto b = std::make_shared<Program>();
  b->name = std::move(name);
  ValueId x = b->add_value(f32({3}));
  ValueId e = b->add_value(f32({3}));
  ValueId s = b->add_value(f32({3}));
  b->inputs = {x};
  b->equations.push_back(eqn(Primitive::exp, {x}, {e}));
  b->equations.push_back(eqn(Primitive::add, {e, x}, {s}));
  b->outputs = {s};
  return b;
}

Program with_subprogram(std::shared_ptr<const Program> sub) {
  Program p;
  p.name = "outer";
  ValueId x = p.add_value(f32({3}));
  ValueId y = p.add_value(f32({3}));
  p.inputs = {x};
  Equation e = eqn(Primitive::neg, {x}, {y});
  e.subprograms.push_back(std::move(sub));
  p.equations.push_back(std::move(e));
  p.outputs = {y};
  return p;
}

// scan[length=2] carrying one f32[3] through `sub` (which maps f32[3] to f32[3]).
Equation scan_eqn(ValueId in, ValueId out, std::shared_ptr<const Program> sub) {
  Equation e = eqn(Primitive::scan, {in}, {out}, ScanParams{2, false, 1, 0});
  e.subprograms.push_back(std::move(sub));
  return e;
}

// x -> exp -> scan(sub, sub2...) : f32[3] -> f32[3], each scan a loop over `sub`.
std::shared_ptr<Program> looping_body(std::string name, const std::vector<std::shared_ptr<const Program>>& subs) {
  auto b = std::make_shared<Program>();
  b->name = std::move(name);
  ValueId v = b->add_value(f32({3}));
  b->inputs = {v};
  for (const auto& sub : subs) {
    ValueId next = b->add_value(f32({3}));
    b->equations.push_back(scan_eqn(v, next, sub));
    v = next;
  }
  b->outputs = {v};
  return b;
}

TEST(Verifier, AcceptsNestedSubprogramsWithTheirOwnNumbering) {
  auto middle = looping_body("middle", {body("inner")});
  auto outer = looping_body("outer", {middle});
  EXPECT_NO_THROW(verify(*outer));
}

TEST(Verifier, RejectsSubprogramsOnPrimitivesWithoutBodies) {
  EXPECT_THAT(rejected(with_subprogram(body("sub"))), HasSubstr("neg: takes no sub-programs"));
}

TEST(Verifier, RejectsErrorsInsideSubprogramsNamingThePath) {
  auto inner = body("inner");
  inner->equations[1].inputs = {1, 2};  // %2 is defined by this very equation
  auto middle = body("middle");
  middle->equations[1].subprograms.push_back(inner);
  EXPECT_EQ(rejected(with_subprogram(middle)),
            "program 'outer': %1 = neg: subprogram 0: program 'middle': %2 = add: subprogram 0: "
            "program 'inner': %2 = add: operand 1 uses %2 before it is defined");
}

TEST(Verifier, RejectsNullAndSelfContainingSubprograms) {
  EXPECT_EQ(rejected(with_subprogram(nullptr)), "program 'outer': %1 = neg: subprogram 0 is null");

  auto loop = body("loop");
  loop->equations[0].subprograms.push_back(loop);  // a cycle: verify must not recurse forever
  EXPECT_THAT(rejected(with_subprogram(loop)), HasSubstr("program 'loop': contains itself as a subprogram"));
  loop->equations[0].subprograms.clear();  // break the cycle so the shared_ptrs free
}

// A chain of programs where each level uses the one below twice: checking each shared subprogram
// once keeps this linear instead of 2^depth.
TEST(Verifier, ChecksASharedSubprogramOnce) {
  std::shared_ptr<Program> level = body("level0");
  for (int i = 1; i <= 60; ++i) level = looping_body(fmt::format("level{}", i), {level, level, level});
  EXPECT_NO_THROW(verify(*level));
}

TEST(Verifier, IsLinearOnALongChain) {
  Program p;
  ValueId v = p.add_value(f32({8}));
  p.inputs = {v};
  for (int i = 0; i < 20000; ++i) {
    ValueId next = p.add_value(f32({8}));
    p.equations.push_back(eqn(i % 2 ? Primitive::sin : Primitive::neg, {v}, {next}));
    v = next;
  }
  p.outputs = {v};
  EXPECT_NO_THROW(verify(p));
}

}  // namespace
}  // namespace ferry::ir
