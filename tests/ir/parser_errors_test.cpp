// The parser on malformed text: every error is INVALID_ARGUMENT with the right "line L, column C"
// and says what is wrong; no input crashes, hangs or overflows the stack.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"
#include "support/error_of.h"

namespace ferry::ir {
namespace {

using prims::verify;  // with the primitives' shape rules

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct BadInput {
  std::string text;
  int line, column;
  std::string fragment;
};

// Wraps equation lines in a program with one input %0: f32[2]; they start on line 2, column 3.
std::string body(const std::string& lines) { return "program @main(%0: f32[2]) {\n  " + lines + "\n  return %0\n}\n"; }

const std::vector<BadInput>& bad_inputs() {
  static const std::vector<BadInput> cases = {
      // Structure.
      {"", 1, 1, "expected 'program', got end of input"},
      {"  \n  // only a comment\n", 3, 1, "expected 'program', got end of input"},
      {"programme @main() {\n  return\n}", 1, 1, "expected 'program', got 'programme'"},
      {"program main() { return }", 1, 9, "expected '@', got 'main'"},
      {"program @9() { return }", 1, 10, "expected a program name, got '9'"},
      {"program @main( { return }", 1, 16, "expected a value such as %0, got '{'"},
      {"program @main(%0 f32[2]) { return }", 1, 18, "expected ':', got 'f32'"},
      {"program @main(%0: f32[2] %1: f32[2]) { return }", 1, 26, "expected ',' or ')', got '%'"},
      {"program @main() {\n}", 2, 1, "expected an equation or 'return', got '}'"},
      {"program @main() {\n  return", 2, 9, "expected a value or '}' after 'return', got end of input"},
      {"program @main() {\n  return\n}\nextra", 4, 1, "expected end of input after the program, got 'extra'"},
      {"program @main() {\n  return\n}}", 3, 2, "expected end of input after the program, got '}'"},
      {"program @main(%0: f32[2]) {\n  return %0 %0\n}", 2, 13, "expected ',' or '}', got '%'"},
      // Types.
      {"program @main(%0: f33[2]) { return }", 1, 19, "unknown dtype 'f33' (expected one of f32, f64, f16, bf16, i32, bool)"},
      {"program @main(%0: [2]) { return }", 1, 19, "expected a type such as f32[2,3], got '['"},
      {"program @main(%0: f32[2,-3]) { return }", 1, 25, "negative dimension -3 in a type"},
      {"program @main(%0: f32[2.5]) { return }", 1, 23, "malformed integer '2.5'"},
      {"program @main(%0: f32[true]) { return }", 1, 23, "expected an integer, got 'true'"},
      {"program @main(%0: f32[2,]) { return }", 1, 25, "expected an integer, got ']'"},
      {"program @main(%0: f32[2 3]) { return }", 1, 25, "expected ',' or ']', got '3'"},
      {"program @main(%0: f32[99999999999999999999]) { return }", 1, 23,
       "integer '99999999999999999999' does not fit in 64 bits"},
      {"program @main(%0: f32[1073741824,1073741825]) { return }", 1, 19,
       "type f32[1073741824,1073741825] is too large: more than 2^62 bytes"},
      {"program @main(%0: bool[0,4611686018427387905]) { return }", 1, 19, "too large"},
      // Zero-size dimensions count as 1: the rule the tracer and Array apply too (ir/limits.h).
      {"program @main(%0: f32[0,4611686018427387904,4611686018427387904]) { return }", 1, 19,
       "counting each zero-size dimension as 1"},
      {"program @main(%0: f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]) { return }", 1, 19,
       "has 33 dimensions, more than 32"},
      {"program @main(%0: f32[2]{gpu}) { return }", 1, 26,
       "unknown memory kind 'gpu' (expected one of device, pinned_host, unpinned_host)"},
      {"program @main(%0: f32[2]{}) { return }", 1, 26, "expected a memory kind, got '}'"},
      {"program @main(%0: f32[2]{device) { return }", 1, 32, "expected '}', got ')'"},
      // Values.
      {"program @main(%0: f32[2], %0: f32[3]) { return }", 1, 27, "value %0 is defined twice"},
      {"program @main(%0: f32[2]) {\n  return %1\n}", 2, 10, "undefined value %1"},
      {"program @main(%0: f32[2]) {\n  return %x\n}", 2, 11, "expected a value number after '%', got 'x'"},
      {"program @main(%0: f32[2]) {\n  return %-1\n}", 2, 11, "expected a value number after '%', got '-'"},
      {"program @main(%0: f32[2]) {\n  return %1a\n}", 2, 10, "malformed value '%1a'"},
      {"program @main(%99999999999999999999: f32[2]) { return }", 1, 15,
       "value number %99999999999999999999 does not fit in 64 bits"},
      {body("%1 = sin %0 : f32[2]\n  %1 = cos %0 : f32[2]"), 3, 3, "value %1 is defined twice"},
      {body("%0 = sin %0 : f32[2]"), 2, 3, "value %0 is defined twice"},
      {body("%1, %1 = sin %0 : f32[2], f32[2]"), 2, 7, "value %1 is defined twice"},
      {body("%1 = sin %1 : f32[2]"), 2, 12, "undefined value %1"},
      {body("%1 = sin %0, %7 : f32[2]"), 2, 16, "undefined value %7"},
      // Equations.
      {body("%1 sin %0 : f32[2]"), 2, 6, "expected '=', got 'sin'"},
      {body("%1 = %0 : f32[2]"), 2, 8, "expected a primitive name, got '%'"},
      {body("%1 = frobnicate %0 : f32[2]"), 2, 8, "unknown primitive 'frobnicate'"},
      {body("%1 = sin %0"), 3, 3, "expected ',' or ':', got 'return'"},
      {body("%1, %2 = sin %0 : f32[2]"), 3, 3, "expected ',' and another type (the equation defines 2 values), got 'return'"},
      {body("%1 = sin %0 : f32[2], f32[2]"), 2, 23, "the equation defines 1 value(s) but lists more types"},
      {body("%1 = sin %0 : f32[2] @name"), 2, 25, "expected a quoted name, got 'name'"},
      {body("%1 = sin %0 : f32[2] @\"abc"), 2, 25, "unterminated string"},
      {"program @main() { %0 = neg : f32[] @\"abc\\", 1, 37, "unterminated string"},
      {body("%1 = sin %0 : f32[2] @\"a\\nb\""), 2, 27, "unknown escape in string: backslash then 'n'"},
      {body("%1 = sin %0 : f32[2] { }"), 2, 26, "expected a memory kind, got '}'"},
      {body("%1 = sin %0 : f32[2] @\"x\" { }"), 2, 31, "expected 'program', got '}'"},
      {body("%1 = sin %0 : f32[2] @\"x\" { program @s() { return }"), 3, 3, "expected '}', got 'return'"},
      // Attributes.
      {body("%1 = reduce_sum[axis=[0]] %0 : f32[]"), 2, 19, "unknown attribute 'axis' for reduce_sum (it takes axes)"},
      {body("%1 = reduce_sum %0 : f32[]"), 2, 18, "reduce_sum is missing attribute 'axes'"},
      {body("%1 = reduce_sum[] %0 : f32[]"), 2, 19, "reduce_sum is missing attribute 'axes'"},
      {body("%1 = broadcast_in_dim[shape=[2,2]] %0 : f32[2,2]"), 2, 36,
       "broadcast_in_dim is missing attribute 'broadcast_dimensions'"},
      {body("%1 = reduce_sum[axes=[0], axes=[0]] %0 : f32[]"), 2, 29, "attribute 'axes' is given twice"},
      {body("%1 = sin[axes=[0]] %0 : f32[2]"), 2, 12, "unknown attribute 'axes': sin takes no attributes"},
      {body("%1 = reduce_sum[axes=0] %0 : f32[]"), 2, 24, "expected '[', got '0'"},
      {body("%1 = reduce_sum[axes [0]] %0 : f32[]"), 2, 24, "expected '=', got '['"},
      {body("%1 = reduce_sum[axes=[0] %0 : f32[]"), 2, 28, "expected ',' or ']', got '%'"},
      {body("%1 = reduce_sum[axes=[0 1]] %0 : f32[]"), 2, 27, "expected ',' or ']', got '1'"},
      {body("%1 = reduce_sum[axes=[1x]] %0 : f32[]"), 2, 25, "malformed integer '1x'"},
      {body("%1 = reduce_sum[axes=[-9223372036854775809]] %0 : f32[]"), 2, 25,
       "integer '-9223372036854775809' does not fit in 64 bits"},
      {body("%1 = convert_element_type[new_dtype=float] %0 : f32[2]"), 2, 39, "unknown dtype 'float'"},
      {body("%1 = device_put[dst=host] %0 : f32[2]"), 2, 23, "unknown memory kind 'host'"},
      {body("%1 = constant[value=1.5.5, dtype=f32, shape=[]] : f32[]"), 2, 23, "malformed number '1.5.5'"},
      {body("%1 = constant[value=1e999, dtype=f32, shape=[]] : f32[]"), 2, 23,
       "number '1e999' is out of the range of f64"},
      {body("%1 = constant[value=+1, dtype=f32, shape=[]] : f32[]"), 2, 23, "expected a number, got '+'"},
      {body("%1 = constant[value=-, dtype=f32, shape=[]] : f32[]"), 2, 23, "expected a number, got '-'"},
      {body("%1 = constant[value=0x10, dtype=f32, shape=[]] : f32[]"), 2, 23, "malformed number '0x10'"},
      // Garbage bytes.
      {std::string("program @main() {\0 return }", 27), 1, 18, "expected an equation or 'return', got byte 0x00"},
      {std::string("\0", 1), 1, 1, "expected 'program', got byte 0x00"},
      {"\xef\xbb\xbfprogram @main() { return }", 1, 1, "expected 'program', got byte 0xef"},
      {"program @main() {\n  \xc3\xa9 = sin\n", 2, 3, "got byte 0xc3"},
      {"program @main(%0: f32[2]) { return %0 \x7f }", 1, 39, "expected ',' or '}', got byte 0x7f"},
      {"program @main() { return } /", 1, 28, "expected end of input after the program, got '/'"},
  };
  return cases;
}

void expect_error(const std::string& text, int line, int column, const std::string& fragment) {
  try {
    auto p = parse(text);
    ADD_FAILURE() << "parsed without error:\n" << print(*p);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_THAT(e.message(), StartsWith(fmt::format("line {}, column {}: ", line, column)));
    EXPECT_THAT(e.message(), HasSubstr(fragment));
  }
}

TEST(ParserErrors, TableOfBadInputs) {
  int checked = 0;
  for (const BadInput& c : bad_inputs()) {
    SCOPED_TRACE(::testing::Message() << "input:\n" << c.text);
    expect_error(c.text, c.line, c.column, c.fragment);
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

// `levels` programs, each holding the next as the subprogram of its one equation.
std::string nested(int levels) {
  std::string text;
  for (int i = 1; i < levels; ++i) text += "program @p() { %0 = iota[dtype=i32, shape=[], dimension=0] : i32[] {\n";
  text += "program @leaf() { return }\n";
  for (int i = 1; i < levels; ++i) text += "} return %0 }\n";
  return text;
}

TEST(ParserErrors, NestingTooDeep) {
  // The 66th program (64 levels of subprograms below the top allowed) is on line 66.
  expect_error(nested(66), 66, 1, "subprograms are nested more than 64 levels deep");
  // Far deeper input fails the same way instead of exhausting the stack.
  expect_error(nested(100000), 66, 1, "nested more than 64 levels deep");
  expect_error(std::string(1000000, '{'), 1, 1, "expected 'program', got '{'");
}

// A program touching every construct, for truncation and mutation.
const char* kRichProgram = R"(// header comment
program @main(%0: f32[2,3], %1: f32[3]{pinned_host}, %2: i32[]) {
  %3 = sin %0 : f32[2,3]
  %4 = broadcast_in_dim[shape=[2,3], broadcast_dimensions=[1]] %1 : f32[2,3]{pinned_host}
  %5 = constant[value=-2.5e-07, dtype=f32, shape=[2,3]] : f32[2,3]
  %6, %7 = add %3, %5 : f32[2], f32[3] @"a \"b\" \\"
  %8 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %3, %4 : f32[2,2]
  %9 = device_put[dst=unpinned_host] %8 : f32[2,2]{unpinned_host} {
    program @body(%0: f32[2,2]) {
      %1 = reduce_sum[axes=[0,1]] %0 : f32[] {
        program @leaf() {
          return
        }
      }
      return %1
    }
  }
  return %9, %2
}
)";

// Issue 32: an unknown 1 MB primitive name was echoed whole, and 200,001 operands made a 1.6 MB
// message. Echoed tokens and lists are bounded (ir/echo.h).
TEST(ParserErrors, EchoesAreBounded) {
  const std::string name(1 << 20, 'q');
  for (const std::string& text :
       {"program @main(%0: f32[]) { %1 = " + name + " %0 : f32[] return %1 }",
        "program @main(%0: " + name + "[]) { return }", "program @main(%0: f32[]{" + name + "}) { return }",
        "program @main(%0: f32[]) { %1 = sin[" + name + "=1] %0 : f32[] return %1 }",
        "program @main(%0: f32[]) { %1 = sin %0 : f32[] !" + name + " return %1 }"}) {
    try {
      parse(text);
      ADD_FAILURE() << "parsed";
    } catch (const Error& e) {
      EXPECT_LT(e.message().size(), 300u) << e.message().substr(0, 300);
      EXPECT_THAT(e.message(), HasSubstr("qqqq... (1048576 characters)"));
    }
  }
  std::string operands = "%0";
  for (int i = 0; i < 200000; ++i) operands += ", %0";
  auto p = parse("program @main(%0: f32[]) { %1 = add " + operands + " : f32[] return %1 }");
  const std::string wide = ferry::testing::error_of([&] { verify(*p); }).message();
  EXPECT_LT(wide.size(), 400u) << wide.substr(0, 400);
  EXPECT_THAT(wide, HasSubstr("takes 2 operand(s), got 200001 (operands: f32[], f32[], f32[], f32[], f32[], f32[], "
                              "f32[], f32[], ... and 199993 more)"));
  auto named = parse("program @" + name + "(%0: f32[2]) { %1 = reshape[new_sizes=[3]] %0 : f32[3] return %1 }");
  const std::string long_name = ferry::testing::error_of([&] { verify(*named); }).message();
  EXPECT_LT(long_name.size(), 400u) << long_name.substr(0, 400);
}

TEST(ParserErrors, EveryPrefixParsesOrThrows) {
  const std::string text = kRichProgram;
  ASSERT_NO_THROW(parse(text));
  int parsed = 0;
  for (size_t n = 0; n < text.size(); ++n) {
    try {
      parse(std::string_view(text).substr(0, n));
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_THAT(e.message(), StartsWith("line ")) << "prefix of " << n << " bytes";
    }
  }
  // Only the whole program minus its final newline (and nothing shorter) is valid.
  EXPECT_EQ(parsed, 1);
}

TEST(ParserErrors, EveryByteReplacedParsesOrThrows) {
  const std::string text = kRichProgram;
  const char replacements[] = {'\0', '\xff', '%', '{', '}', '[', '"', '\\', '-', '9', 'x', ',', '@', '/', '\n'};
  int errors = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    for (char r : replacements) {
      std::string mutated = text;
      mutated[i] = r;
      try {
        parse(mutated);
      } catch (const Error& e) {
        ++errors;
        ASSERT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
        ASSERT_THAT(e.message(), StartsWith("line ")) << e.what();
      }
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(ParserErrors, ColumnsCountBytesAndLinesCountNewlines) {
  expect_error("\n\n\t  program @main() {\n\r\n  return %3 }", 5, 10, "undefined value %3");
  expect_error(std::string("program @main() { %0 = neg : f32[] @\"x\ny\" ") + "\n  %0 = neg : f32[]\n return }", 3, 3,
               "value %0 is defined twice");
}

}  // namespace
}  // namespace ferry::ir
