// Reads the text form that printer.h writes:
//
//   program   := 'program' '@' ident '(' [input {',' input}] ')' '{' {equation} return '}'
//   input     := value ':' type
//   equation  := value {',' value} '=' prim [attrs] [value {',' value}] ':' type {',' type}
//                ['@' string] ['{' program {program} '}']
//   attrs     := '[' [ident '=' attr_value {',' ident '=' attr_value}] ']'
//   return    := 'return' [value {',' value}]
//   type      := dtype '[' [int {',' int}] ']' ['{' memory_kind '}']
//   value     := '%' digits        ident := [A-Za-z_][A-Za-z0-9_.]*
//   string    := '"' ... '"' with \" and \\ escapes
//
// Whitespace and newlines between tokens are free; `//` starts a comment to the end of the line.
// Each program numbers its own values; any distinct non-negative numbers are accepted and renumbered
// in definition order (inputs, then equation outputs), as the printer numbers them.
#pragma once

#include <memory>
#include <string_view>

#include "ir/program.h"

namespace ferry::ir {

// Parses one program. Throws ferry::Error(INVALID_ARGUMENT, "line L, column C: <what is wrong>") for
// malformed text: a syntax error, an undefined or twice-defined value, an unknown primitive, dtype,
// memory kind or attribute, a missing or repeated attribute, an integer that overflows int64, a
// negative dimension, a type over 2^62 bytes, or subprograms nested deeper than 64 levels. Lines and
// columns count from 1; columns count bytes.
//
// It checks syntax and names only: operand counts, shapes and types are the verifier's business.
//
// The compiler's own primitives (copy_start, copy_done, fused: what passes make after
// differentiation) are accepted only where `compiler_ops` is set (pass tests, and text a compiled
// program printed); in a user's program they are INVALID_ARGUMENT, since no pass before the ones
// that make them handles them.
struct ParseOptions {
  bool compiler_ops = true;
};
std::shared_ptr<Program> parse(std::string_view text, ParseOptions options = {});

}  // namespace ferry::ir
