#include "ir/parser.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/echo.h"
#include "ir/limits.h"
#include "ir/params_text.h"

namespace ferry::ir {
namespace {


constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::boolean};
constexpr MemoryKind kMemoryKinds[] = {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::unpinned_host};

// ASCII only, independent of the locale.
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c) || c == '.'; }

template <class Enum, size_t N, class NameFn>
std::string names_of(const Enum (&all)[N], NameFn name) {
  std::vector<std::string_view> names;
  for (Enum e : all) names.push_back(name(e));
  return fmt::format("{}", fmt::join(names, ", "));
}

// The values of the program being parsed: number in the text -> ValueId.
struct Scope {
  Program& program;
  std::unordered_map<int64_t, ValueId> ids;
};

// A value number where it is defined: `%7` at byte offset `pos`.
struct Def {
  int64_t number;
  size_t pos;
};

// Recursive descent over the characters; every method skips leading whitespace and comments, so
// positions in errors point at the offending token.
class Parser final : public ParamValueReader {
 public:
  Parser(std::string_view text, ParseOptions options) : text_(text), options_(options) {}

  std::shared_ptr<Program> parse_all() {
    auto p = parse_program(0);
    skip_space();
    if (!at_end()) expected("end of input after the program");
    return p;
  }

  int64_t read_int() override {
    skip_space();
    const size_t start = pos_;
    size_t p = pos_;
    if (p < text_.size() && text_[p] == '-') ++p;
    if (p >= text_.size() || !is_digit(text_[p])) expected("an integer");
    while (p < text_.size() && is_digit(text_[p])) ++p;
    if (p < text_.size() && is_ident_char(text_[p]))
      fail_at(start, fmt::format("malformed integer {}", token_at(start)));
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + start, text_.data() + p, v);
    if (ec != std::errc{} || ptr != text_.data() + p)
      fail_at(start, fmt::format("integer {} does not fit in 64 bits", token_at(start)));
    pos_ = p;
    return v;
  }

  std::vector<int64_t> read_int_list() override {
    expect('[');
    std::vector<int64_t> v;
    if (accept(']')) return v;
    do v.push_back(read_int());
    while (accept(','));
    expect_close(']');
    return v;
  }

  double read_double() override {
    skip_space();
    const size_t start = pos_;
    size_t p = pos_;
    if (p < text_.size() && text_[p] == '-') ++p;
    const size_t body = p;
    // Digits, letters (inf, nan, exponents) and '.', and a sign right after an exponent's 'e'.
    while (p < text_.size()) {
      char c = text_[p];
      bool exponent_sign = (c == '+' || c == '-') && p > body && (text_[p - 1] == 'e' || text_[p - 1] == 'E');
      if (!is_ident_char(c) && !exponent_sign) break;
      ++p;
    }
    if (p == body) expected("a number");
    double v = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + start, text_.data() + p, v);
    if (ec == std::errc::result_out_of_range)
      fail_at(start, fmt::format("number {} is out of the range of f64", token_at(start)));
    if (ec != std::errc{} || ptr != text_.data() + p)
      fail_at(start, fmt::format("malformed number {}", token_at(start)));
    pos_ = p;
    return v;
  }

  DType read_dtype() override {
    skip_space();
    const size_t start = pos_;
    std::string_view w = word();
    if (w.empty()) expected("a dtype");
    for (DType t : kDTypes)
      if (dtype_name(t) == w) return t;
    fail_at(start, fmt::format("unknown dtype '{}' (expected one of {})", echo(w), names_of(kDTypes, dtype_name)));
  }

  MemoryKind read_memory_kind() override {
    skip_space();
    const size_t start = pos_;
    std::string_view w = word();
    if (w.empty()) expected("a memory kind");
    for (MemoryKind k : kMemoryKinds)
      if (memory_kind_name(k) == w) return k;
    fail_at(start,
            fmt::format("unknown memory kind '{}' (expected one of {})", echo(w), names_of(kMemoryKinds, memory_kind_name)));
  }

  bool read_bool() override {
    skip_space();
    const size_t start = pos_;
    std::string_view w = word();
    if (w == "true") return true;
    if (w == "false") return false;
    pos_ = start;
    expected("true or false");
  }

 private:
  // ---- errors --------------------------------------------------------------------------------

  [[noreturn]] void fail_at(size_t pos, const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw Error(ErrorCode::invalid_argument, fmt::format("line {}, column {}: {}", line, column, what));
  }

  [[noreturn]] void expected(std::string_view what) {
    skip_space();
    fail_at(pos_, fmt::format("expected {}, got {}", what, describe(pos_)));
  }

  // What stands at `pos`, for messages; never copies raw control or non-ASCII bytes.
  std::string describe(size_t pos) const {
    if (pos >= text_.size()) return "end of input";
    char c = text_[pos];
    if (is_ident_char(c)) return token_at(pos);
    return describe_byte(pos);
  }

  // The one byte at `pos`, for messages.
  std::string describe_byte(size_t pos) const {
    if (pos >= text_.size()) return "end of input";
    char c = text_[pos];
    if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", c);
    return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
  }

  // The word or number starting at `pos`, cut to a readable length.
  std::string token_text(size_t pos) const {
    size_t end = pos;
    if (end < text_.size() && text_[end] == '-') ++end;
    while (end < text_.size() && (is_ident_char(text_[end]) || text_[end] == '+' || text_[end] == '-')) ++end;
    return echo(text_.substr(pos, end - pos));
  }
  std::string token_at(size_t pos) const { return fmt::format("'{}'", token_text(pos)); }

  // ---- tokens --------------------------------------------------------------------------------

  bool at_end() const { return pos_ >= text_.size(); }

  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  bool at(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  bool accept(char c) {
    if (!at(c)) return false;
    ++pos_;
    return true;
  }

  void expect(char c) {
    if (!accept(c)) expected(fmt::format("'{}'", c));
  }

  // The end of a comma-separated list.
  void expect_close(char c) {
    if (!accept(c)) expected(fmt::format("',' or '{}'", c));
  }

  // An identifier [A-Za-z_][A-Za-z0-9_.]*, or "" (consuming nothing) when none starts here.
  std::string_view word() {
    skip_space();
    const size_t start = pos_;
    if (pos_ >= text_.size() || !is_ident_start(text_[pos_])) return {};
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  std::string_view peek_word() {
    const size_t save = pos_;
    std::string_view w = word();
    pos_ = save;
    return w;
  }

  // `%<digits>`
  Def value_number() {
    skip_space();
    const size_t start = pos_;
    if (!accept('%')) expected("a value such as %0");
    if (pos_ >= text_.size() || !is_digit(text_[pos_]))
      fail_at(pos_, fmt::format("expected a value number after '%', got {}", describe(pos_)));
    size_t p = pos_;
    while (p < text_.size() && is_digit(text_[p])) ++p;
    if (p < text_.size() && is_ident_char(text_[p]))
      fail_at(start, fmt::format("malformed value '%{}'", token_text(pos_)));
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + pos_, text_.data() + p, v);
    if (ec != std::errc{} || ptr != text_.data() + p)
      fail_at(start, fmt::format("value number %{} does not fit in 64 bits", token_text(pos_)));
    pos_ = p;
    return {v, start};
  }

  std::string quoted_string() {
    skip_space();
    const size_t start = pos_;
    if (!accept('"')) expected("a quoted name");
    std::string s;
    while (true) {
      if (pos_ >= text_.size()) fail_at(start, "unterminated string");
      char c = text_[pos_++];
      if (c == '"') return s;
      if (c != '\\') {
        s += c;
        continue;
      }
      if (pos_ >= text_.size()) fail_at(start, "unterminated string");
      char e = text_[pos_];
      if (e != '"' && e != '\\')
        fail_at(pos_ - 1, fmt::format("unknown escape in string: backslash then {} (only \\\" and \\\\ are escapes)",
                                      describe_byte(pos_)));
      s += e;
      ++pos_;
    }
  }

  // ---- values --------------------------------------------------------------------------------

  void check_new(const Scope& scope, const Def& d) const {
    if (scope.ids.count(d.number)) fail_at(d.pos, fmt::format("value %{} is defined twice", d.number));
  }

  ValueId define(Scope& scope, const Def& d, Type t) const {
    check_new(scope, d);
    if (scope.program.values.size() >= static_cast<size_t>(std::numeric_limits<ValueId>::max()))
      fail_at(d.pos, "too many values in one program");
    ValueId id = scope.program.add_value(std::move(t));
    scope.ids.emplace(d.number, id);
    return id;
  }

  ValueId use(const Scope& scope) {
    Def d = value_number();
    auto it = scope.ids.find(d.number);
    if (it == scope.ids.end()) fail_at(d.pos, fmt::format("undefined value %{}", d.number));
    return it->second;
  }

  // ---- types ---------------------------------------------------------------------------------

  Type parse_type() {
    skip_space();
    const size_t start = pos_;
    if (peek_word().empty()) expected("a type such as f32[2,3]");
    Type t;
    t.dtype = read_dtype();
    expect('[');
    if (!accept(']')) {
      do {
        skip_space();
        const size_t dim_pos = pos_;
        int64_t d = read_int();
        if (d < 0) fail_at(dim_pos, fmt::format("negative dimension {} in a type", d));
        t.shape.push_back(d);
      } while (accept(','));
      expect_close(']');
    }
    // The rule every path applies (ir/limits.h), so that what traces also parses back.
    if (std::string problem = size_problem(t.dtype, t.shape); !problem.empty())
      fail_at(start, fmt::format("type {} {}", type_string(t.dtype, t.shape), problem));
    // `{kind}`; a `{` that opens subprograms (`{ program ...`) belongs to the equation instead.
    const size_t save = pos_;
    if (accept('{')) {
      if (peek_word() == "program") {
        pos_ = save;
        return t;
      }
      t.kind = read_memory_kind();
      expect('}');
    }
    return t;
  }

  // ---- attributes ----------------------------------------------------------------------------

  // `[name=value, ...]` into `params`, whose alternative is already the primitive's struct. Every
  // field must be given exactly once.
  void parse_attributes(Params& params, std::string_view prim) {
    const std::vector<std::string_view> names = param_names(params);
    std::vector<bool> given(names.size(), false);
    size_t missing_pos = pos_;  // right after the primitive's name when there are no brackets
    if (accept('[')) {
      if (!at(']')) {
        do {
          skip_space();
          const size_t name_pos = pos_;
          std::string_view attr = word();
          if (attr.empty()) expected("an attribute name");
          auto it = std::find(names.begin(), names.end(), attr);
          if (it == names.end()) {
            if (names.empty())
              fail_at(name_pos, fmt::format("unknown attribute '{}': {} takes no attributes", echo(attr), prim));
            fail_at(name_pos,
                    fmt::format("unknown attribute '{}' for {} (it takes {})", echo(attr), prim, fmt::join(names, ", ")));
          }
          const size_t i = static_cast<size_t>(it - names.begin());
          if (given[i]) fail_at(name_pos, fmt::format("attribute '{}' is given twice", echo(attr)));
          expect('=');
          read_param(params, attr, *this);
          given[i] = true;
        } while (accept(','));
      }
      skip_space();
      missing_pos = pos_;
      expect_close(']');
    }
    for (size_t i = 0; i < names.size(); ++i)
      if (!given[i]) fail_at(missing_pos, fmt::format("{} is missing attribute '{}'", prim, names[i]));
  }

  // ---- programs ------------------------------------------------------------------------------

  void parse_equation(Scope& scope, int depth) {
    std::vector<Def> outs;
    do {
      Def d = value_number();
      check_new(scope, d);
      for (const Def& o : outs)
        if (o.number == d.number) fail_at(d.pos, fmt::format("value %{} is defined twice", d.number));
      outs.push_back(d);
    } while (accept(','));
    expect('=');

    skip_space();
    const size_t prim_pos = pos_;
    std::string_view prim_name = word();
    if (prim_name.empty()) expected("a primitive name");
    const OpInfo* info = find_op(prim_name);
    if (info == nullptr) fail_at(prim_pos, fmt::format("unknown primitive '{}'", echo(prim_name)));
    if (!options_.compiler_ops && compiler_only(info->prim))
      fail_at(prim_pos, fmt::format("'{}' is made by the compiler and cannot be part of a program it is given "
                                    "(write device_put for a copy between memory kinds, and the operations for a fused loop)",
                                    info->name));

    Equation eq;
    eq.prim = info->prim;
    eq.params = info->params;
    parse_attributes(eq.params, info->name);

    if (at('%')) {
      do eq.inputs.push_back(use(scope));
      while (accept(','));
    }
    if (!accept(':')) expected(eq.inputs.empty() ? "operands or ':'" : "',' or ':'");

    std::vector<Type> types;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (i > 0 && !accept(','))
        expected(fmt::format("',' and another type (the equation defines {} values)", outs.size()));
      types.push_back(parse_type());
    }
    if (at(',')) fail_at(pos_, fmt::format("the equation defines {} value(s) but lists more types", outs.size()));
    for (size_t i = 0; i < outs.size(); ++i) eq.outputs.push_back(define(scope, outs[i], std::move(types[i])));

    if (accept('@')) eq.name = quoted_string();
    parse_annotations(eq);

    if (at('{')) {
      ++pos_;
      do eq.subprograms.push_back(parse_program(depth + 1));
      while (peek_word() == "program");
      expect('}');
    }
    scope.program.equations.push_back(std::move(eq));
  }

  // ` !save`, ` !recompute`, ` !offload(src,dst)`, ` !automatic` (at most one), ` !remat` and ` !auto`.
  void parse_annotations(Equation& eq) {
    bool decided = false;
    while (accept('!')) {
      skip_space();
      const size_t start = pos_;
      std::string_view w = word();
      if (w == "remat") {
        if (eq.rematerialized) fail_at(start, "'!remat' given twice");
        eq.rematerialized = true;
        continue;
      }
      if (w == "auto") {
        if (eq.automatic) fail_at(start, "'!auto' given twice");
        eq.automatic = true;
        continue;
      }
      if (decided) fail_at(start, "an equation has at most one of !save, !recompute, !offload, !automatic");
      decided = true;
      if (w == "save") {
        eq.decision.kind = RematDecision::Kind::save;
      } else if (w == "recompute") {
        eq.decision.kind = RematDecision::Kind::recompute;
      } else if (w == "automatic") {
        eq.decision.kind = RematDecision::Kind::automatic;
      } else if (w == "offload") {
        eq.decision.kind = RematDecision::Kind::offload;
        expect('(');
        eq.decision.src = read_memory_kind();
        expect(',');
        eq.decision.dst = read_memory_kind();
        expect(')');
      } else {
        fail_at(start, fmt::format("unknown annotation '!{}' (expected save, recompute, offload(src,dst), automatic, remat or auto)", echo(w)));
      }
    }
  }

  std::shared_ptr<Program> parse_program(int depth) {
    skip_space();
    const size_t start = pos_;
    if (word() != "program") {
      pos_ = start;
      expected("'program'");
    }
    if (depth > kMaxNesting)
      fail_at(start, fmt::format("subprograms are nested more than {} levels deep", kMaxNesting));

    auto program = std::make_shared<Program>();
    Scope scope{*program, {}};
    expect('@');
    skip_space();
    program->name = std::string(word());
    if (program->name.empty()) expected("a program name");

    expect('(');
    if (!accept(')')) {
      do {
        Def d = value_number();
        check_new(scope, d);
        expect(':');
        Type t = parse_type();
        program->inputs.push_back(define(scope, d, std::move(t)));
      } while (accept(','));
      expect_close(')');
    }
    expect('{');

    while (true) {
      if (at('%')) {
        parse_equation(scope, depth);
        continue;
      }
      if (peek_word() == "return") break;
      expected("an equation or 'return'");
    }
    word();  // return
    if (at('%')) {
      do program->outputs.push_back(use(scope));
      while (accept(','));
      expect_close('}');
    } else if (!accept('}')) {
      expected("a value or '}' after 'return'");
    }
    return program;
  }

  std::string_view text_;
  ParseOptions options_;
  size_t pos_ = 0;
};

}  // namespace

std::shared_ptr<Program> parse(std::string_view text, ParseOptions options) { return Parser(text, options).parse_all(); }

}  // namespace ferry::ir
