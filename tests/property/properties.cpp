#include "property/properties.h"

#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "compiler/memory_plan.h"
#include "compiler/pipeline.h"
#include "ir/parser.h"
#include "runtime/workspace.h"
#include "ferry/autodiff.h"
#include "support/gradient_check.h"
#include "support/memory_check.h"
#include "driver/lowered.h"

namespace ferry::property {
namespace {

// "" when the texts agree, else the first line that differs.
std::string text_difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "texts differ in their last newline";
    if (la != lb || ga != gb) return fmt::format("line {}:\n  printed: {}\n  reparsed: {}", line, la, lb);
  }
}

std::string round_trip(const std::string& text) {
  return text_difference(text, detail::parse_program_with_compiler_ops(text).as_text());
}

auto grad_program(const RandomProgram& p, bool checkpoints) {
  return jit([&p, checkpoints](std::vector<Tensor> xs) {
    return grad([&p, checkpoints](const std::vector<Tensor>& ys) { return emit_loss(p, ys, checkpoints); })(xs);
  }, "random_grad");
}

// Both NaN, both the same infinity, or within tolerance of the scale.
bool close(double got, double want, double scale, double tolerance = kGradientTolerance) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (got == want) return true;
  return std::abs(got - want) <= tolerance * scale;
}

// Whether the program rounds a value through f32 (a convert there and back).
bool rounds_through_f32(const Block& b) {
  for (const Op& op : b.ops)
    if ((op.kind == OpKind::unary && op.code == 10) || (op.body && rounds_through_f32(*op.body))) return true;
  return false;
}

// The gradient of h(xs) = sum over every argument of sum(grad(loss)(xs)): second-order
// differentiation through everything the program holds (scans, checkpoints, offloads).
auto second_order_program(const RandomProgram& p, bool checkpoints) {
  return jit([&p, checkpoints](std::vector<Tensor> xs) {
    return grad([&p, checkpoints](const std::vector<Tensor>& ys) {
      std::vector<Tensor> g = grad([&p, checkpoints](const std::vector<Tensor>& zs) { return emit_loss(p, zs, checkpoints); })(ys);
      Tensor total = sum(g[0]);
      for (size_t i = 1; i < g.size(); ++i) total = total + sum(g[i]);
      return total;
    })(xs);
  }, "random_second_order");
}

// "" when each gradient is within tolerance of the one wanted, else where it is not.
std::string gradient_difference(const std::vector<Array>& got, const std::vector<Array>& want, bool* identical = nullptr,
                                double tolerance = kGradientTolerance) {
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<double> g = got.at(i).to_vector<double>(), w = want[i].to_vector<double>();
    double scale = 1;
    for (double x : w) scale = std::isfinite(x) ? std::max(scale, std::abs(x)) : scale;
    if (identical) *identical = *identical && got[i].equals(want[i]);
    for (size_t j = 0; j < w.size(); ++j)
      if (!close(g[j], w[j], scale, tolerance))
        return fmt::format("argument {} element {}: {} with checkpoints, {} without (scale {})", i, j, g[j], w[j], scale);
  }
  return "";
}


std::optional<Failure> check(const RandomProgram& p, CheckStats* stats) {
  std::vector<Array> args = testing::random_f64(p.arguments, p.seed);
  std::string stage = "lowering";
  try {
    Lowered lowered = grad_program(p, true).lower(args);
    std::string text = lowered.as_text();

    stage = "the lowered text round-trips";
    if (std::string d = round_trip(text); !d.empty()) return Failure{stage, d};

    stage = "every pass's output verifies and its text round-trips";
    std::string pass_failure;
    compiler::run_pipeline(*lowered.impl().program, {}, [&](const std::string& dumped) {
      if (!pass_failure.empty()) return;
      size_t header = dumped.find('\n');
      std::string body = dumped.substr(header + 1);
      if (std::string d = round_trip(body); !d.empty()) pass_failure = dumped.substr(0, header) + ": " + d;
    });
    if (!pass_failure.empty()) return Failure{stage, pass_failure};

    // Checked mode: a buffer read outside its live range reads NaNs, so a liveness bug in the plan
    // changes the gradients below instead of passing silently.
    stage = "compiling";
    Compiled compiled = lowered.compile({.checked = true});
    stage = "the compiled text round-trips";
    if (std::string d = round_trip(compiled.as_text()); !d.empty()) return Failure{stage, d};

    stage = "running";
    std::vector<Array> got = compiled.run(args);
    stage = "measured high-water marks equal the planned peaks, which add up";
    if (std::string d = testing::high_water_mismatch(compiled); !d.empty()) return Failure{stage, d};

    stage = "the program parsed from text gives identical gradients";
    std::vector<Array> reparsed = detail::parse_program_with_compiler_ops(text).compile({.checked = true}).run(args);
    for (size_t i = 0; i < got.size(); ++i)
      if (!got[i].equals(reparsed.at(i))) return Failure{stage, fmt::format("gradient {} differs", i)};

    stage = "the program without checkpoints compiles and runs";
    Compiled plain = grad_program(p, false).lower(args).compile({.checked = true});
    std::vector<Array> want = plain.run(args);
    if (std::string d = testing::high_water_mismatch(plain); !d.empty())
      return Failure{"measured high-water marks equal the planned peaks, which add up (without checkpoints)", d};

    stage = "gradients equal the program's without checkpoints";
    bool identical = true;
    if (std::string d = gradient_difference(got, want, &identical); !d.empty()) return Failure{stage, d};

    stage = "second-order gradients compile and run";
    Compiled second = second_order_program(p, true).lower(args).compile();
    std::vector<Array> second_got = second.run(args);
    if (std::string d = testing::high_water_mismatch(second); !d.empty())
      return Failure{"measured high-water marks equal the planned peaks (second order)", d};
    std::vector<Array> second_want = second_order_program(p, false).lower(args).compile().run(args);
    stage = "second-order gradients equal the program's without checkpoints";
    // The derivative of a convert rounds its cotangent, and the two programs' first-order
    // gradients (identical values) are differentiated along paths that round at different places.
    double tolerance = rounds_through_f32(p.main) ? kF32GradientTolerance : kGradientTolerance;
    if (std::string d = gradient_difference(second_got, second_want, nullptr, tolerance); !d.empty()) return Failure{stage, d};
    if (stats) {
      ++stats->programs;
      stats->bit_identical += identical;
      stats->offloading += compiled.memory_analysis().host_temp_size_in_bytes > 0;
      // Whether compiling placed temporaries in the outputs' allocations (memory_plan.h): the
      // compiled program planned without that has a larger device arena.
      auto scheduled = ir::parse(compiled.as_text());
      compiler::PlanOptions without{runtime::workspace_sizes("cpu"), {}, false};
      stats->temporaries_in_outputs += compiler::plan_memory(*scheduled, false, without)->arena_size[0] >
                                       compiled.memory_analysis().temp_size_in_bytes;
    }
  } catch (const std::exception& e) {
    return Failure{stage, fmt::format("threw: {}", e.what())};
  }
  return std::nullopt;
}

// ---- shrinking ----

Block deep_copy(const Block& b) {
  Block out = b;
  for (Op& op : out.ops)
    if (op.body) op.body = std::make_shared<Block>(deep_copy(*op.body));
  return out;
}

// Removes op i of b; each use of its outputs takes the latest earlier value of the same shape.
bool remove_op(Block& b, size_t i) {
  std::vector<Shape> shapes = b.value_shapes();
  int first = static_cast<int>(b.inputs.size() + b.captures.size());
  for (size_t k = 0; k < i; ++k) first += static_cast<int>(b.ops[k].outs.size());
  int n = static_cast<int>(b.ops[i].outs.size());
  std::vector<int> replacement;  // -1: no earlier value of that shape
  for (const Shape& s : b.ops[i].outs) {
    int r = first - 1;
    while (r >= 0 && shapes[static_cast<size_t>(r)] != s) --r;
    replacement.push_back(r);
  }
  bool ok = true;
  auto remap = [&](int& v) {
    v = v < first ? v : v < first + n ? replacement[static_cast<size_t>(v - first)] : v - n;
    ok = ok && v >= 0;
  };
  for (size_t k = i + 1; k < b.ops.size(); ++k) {
    for (int& a : b.ops[k].args) remap(a);
    if (b.ops[k].body)
      for (int& c : b.ops[k].body->captures) remap(c);
  }
  for (int& o : b.outputs) remap(o);
  if (!ok) return false;  // an output in use has no stand-in
  b.ops.erase(b.ops.begin() + static_cast<std::ptrdiff_t>(i));
  return true;
}

// Every op, as the path of op indices that leads to its block and its index there.
void positions(const Block& b, std::vector<size_t>& path, std::vector<std::pair<std::vector<size_t>, size_t>>& out) {
  for (size_t i = b.ops.size(); i-- > 0;) {
    out.emplace_back(path, i);
    if (b.ops[i].body) {
      path.push_back(i);
      positions(*b.ops[i].body, path, out);
      path.pop_back();
    }
  }
}

}  // namespace

std::optional<Failure> check_properties(const RandomProgram& p, CheckStats* stats) { return check(p, stats); }

RandomProgram shrink(const RandomProgram& failing, const std::function<bool(const RandomProgram&)>& fails,
                     int max_checks) {
  RandomProgram best = failing;
  best.main = deep_copy(failing.main);
  int checks = 0;
  for (int size = 1; size < failing.size && checks < max_checks; ++size) {
    RandomProgram smaller = generate_program(failing.seed, size);
    ++checks;
    if (fails(smaller)) {
      best = smaller;
      break;
    }
  }
  for (bool changed = true; changed && checks < max_checks;) {
    changed = false;
    std::vector<size_t> path;
    std::vector<std::pair<std::vector<size_t>, size_t>> all;
    positions(best.main, path, all);
    for (const auto& [where, i] : all) {
      if (checks >= max_checks) break;
      RandomProgram candidate = best;
      candidate.main = deep_copy(best.main);
      Block* b = &candidate.main;
      for (size_t k : where) b = b->ops[k].body.get();
      if (!remove_op(*b, i)) continue;
      ++checks;
      if (fails(candidate)) {
        best = candidate;
        changed = true;
        break;
      }
    }
  }
  return best;
}

}  // namespace ferry::property
