// checkpoint: the same gradients under every policy, the residuals each policy implies, the
// recomputation and offloading visible in the program text, composition, and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ferry/ferry.h"
#include "support/error_of.h"
#include "support/gradient_check.h"
#include "support/second_report.h"

namespace fy = ferry;
using ::testing::HasSubstr;
using fy::testing::error_of;
using Xs = std::vector<fy::Tensor>;

namespace {

fy::Decision custom_offload_policy(const fy::Equation& e) {
  if (e.primitive() == fy::prim::dot_general && e.dot_dims().lhs_batch.empty() && e.dot_dims().rhs_batch.empty())
    return fy::Offloadable{fy::MemoryKind::device, fy::MemoryKind::pinned_host};
  return fy::Recompute{};
}

std::vector<fy::Policy> all_policies() {
  using namespace fy::policies;
  return {everything_saveable,
          nothing_saveable,
          dots_saveable,
          checkpoint_dots,
          dots_with_no_batch_dims_saveable,
          offload_dot_with_no_batch_dims(fy::MemoryKind::device, fy::MemoryKind::pinned_host),
          offload_dot_with_no_batch_dims(fy::MemoryKind::device, fy::MemoryKind::unpinned_host),
          save_only_these_names({"h"}),
          save_any_names_but_these({"h"}),
          save_and_offload_only_these_names({"a"}, {"h"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host),
          save_from_both_policies(dots_saveable, save_only_these_names({"a"})),
          save_from_both_policies(nothing_saveable,
                                  offload_dot_with_no_batch_dims(fy::MemoryKind::device, fy::MemoryKind::pinned_host)),
          fy::Policy(custom_offload_policy)};
}

// A dense layer with named values: h = tanh(x @ w) named "h", a = h * h named "a".
fy::Tensor layer(fy::Tensor x, fy::Tensor w) {
  fy::Tensor h = fy::checkpoint_name(fy::tanh(fy::matmul(x, w)), "h");
  return fy::checkpoint_name(fy::sin(h) * h, "a");
}

// The programs every policy is checked on; `wrap` turns a function into its checkpointed version.
using Wrap = std::function<std::function<fy::Tensor(fy::Tensor, fy::Tensor)>(std::function<fy::Tensor(fy::Tensor, fy::Tensor)>)>;

fy::Tensor mlp(const Xs& p, const Wrap& wrap) {  // 4 layers, each checkpointed
  fy::Tensor x = p[0];
  for (size_t l = 1; l < p.size(); ++l) x = wrap(layer)(x, p[l]);
  return fy::sum(x);
}

fy::Tensor scan_over_layers(const Xs& p, const Wrap& wrap) {  // checkpoint per scan step
  auto step = wrap(layer);
  auto r = fy::scan([&](fy::Tensor x, fy::Tensor w) { return std::pair{step(x, w), fy::sum(x)}; }, p[0], p[1]);
  return fy::sum(r.carry) + fy::sum(r.ys);
}

fy::Tensor attention(const Xs& p, const Wrap& wrap) {  // batched dots (batch dims) and softmax
  auto block = wrap([](fy::Tensor x, fy::Tensor wqkv) {
    fy::Tensor q = fy::checkpoint_name(fy::matmul(x, wqkv), "h");
    fy::Tensor s = fy::dot_general(q, q, {{2}, {2}, {0}, {0}});  // [b, t, t]
    fy::Tensor e = fy::exp(s - fy::broadcast_in_dim(fy::reduce_max(s, {2}), s.shape(), {0, 1}));
    fy::Tensor a = e / fy::broadcast_in_dim(fy::sum(e, {2}), s.shape(), {0, 1});
    return fy::checkpoint_name(fy::matmul(a, q), "a");
  });
  return fy::sum(block(p[0], p[1]) * p[0]);
}

Wrap no_checkpoint() {
  return [](std::function<fy::Tensor(fy::Tensor, fy::Tensor)> f) { return f; };
}
Wrap with_policy(fy::Policy policy) {
  return [policy](std::function<fy::Tensor(fy::Tensor, fy::Tensor)> f) -> std::function<fy::Tensor(fy::Tensor, fy::Tensor)> {
    auto c = fy::checkpoint(f, policy);
    return [c](fy::Tensor x, fy::Tensor w) { return c(x, w); };
  };
}

struct Case {
  const char* name;
  fy::Tensor (*program)(const Xs&, const Wrap&);
  std::vector<fy::Shape> shapes;
};

TEST(Checkpoint, EveryPolicyGivesBitIdenticalGradients) {
  const Case cases[] = {{"mlp", mlp, {{2, 4}, {4, 4}, {4, 4}, {4, 4}, {4, 4}}},
                        {"scan", scan_over_layers, {{2, 4}, {8, 4, 4}}},
                        {"attention", attention, {{2, 3, 4}, {4, 4}}}};
  for (const Case& c : cases) {
    auto args = fy::testing::random_f64(c.shapes, 3);
    auto want = fy::testing::ferry_gradients([&](const Xs& p) { return c.program(p, no_checkpoint()); }, args);
    for (const fy::Policy& policy : all_policies()) {
      auto got = fy::testing::ferry_gradients([&](const Xs& p) { return c.program(p, with_policy(policy)); }, args);
      EXPECT_EQ(got, want) << c.name << " under " << policy.name();
    }
  }
  // And the gradients are right, not just consistent.
  fy::testing::expect_gradients_match([](const Xs& p) { return mlp(p, with_policy(fy::policies::nothing_saveable)); },
                                      fy::testing::random_f64({{2, 3}, {3, 3}, {3, 3}}, 4));
}

// The residual list of one checkpointed layer under a policy, as "type decision source" lines.
std::vector<std::string> residuals_of(const fy::Policy& policy) {
  auto res = fy::saved_residuals(
      [&](fy::Tensor x, fy::Tensor w) { return fy::sum(fy::checkpoint(layer, policy)(x, w)); },
      fy::ShapeDtype{{2, 4}, fy::DType::f64}, fy::ShapeDtype{{4, 3}, fy::DType::f64});
  std::vector<std::string> lines;
  for (const auto& r : res)
    lines.push_back(fy::type_string(r.type.dtype, r.type.shape) +
                    (r.type.kind == fy::MemoryKind::device ? "" : "{" + std::string(fy::memory_kind_name(r.type.kind)) + "}") +
                    " " + r.decision + " " + r.source);
  return lines;
}

TEST(Checkpoint, ResidualsAreExactlyWhatThePolicyImplies) {
  using namespace fy::policies;
  using V = std::vector<std::string>;
  EXPECT_EQ(residuals_of(nothing_saveable), (V{"f64[2,4] argument argument 0", "f64[4,3] argument argument 1"}));
  EXPECT_EQ(residuals_of(dots_saveable),
            (V{"f64[2,4] argument argument 0", "f64[4,3] argument argument 1", "f64[2,3] saved output of dot_general"}));
  EXPECT_EQ(residuals_of(save_only_these_names({"h"})),
            (V{"f64[2,4] argument argument 0", "f64[4,3] argument argument 1", "f64[2,3] saved named 'h'"}));
  EXPECT_EQ(residuals_of(save_and_offload_only_these_names({}, {"h"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host)),
            (V{"f64[2,4] argument argument 0", "f64[4,3] argument argument 1",
               "f64[2,3]{pinned_host} offloaded named 'h'"}));
  // everything_saveable keeps every forward value the backward pass reads: the named h (tanh's
  // output, for its own VJP and the mul's) and sin(h) (for the mul's). cos(h) and 1 - h^2 are work
  // only the VJP rules need; computed from h in the backward pass they need no residual of their own.
  EXPECT_EQ(residuals_of(everything_saveable),
            (V{"f64[2,4] argument argument 0", "f64[4,3] argument argument 1", "f64[2,3] saved named 'h'",
               "f64[2,3] saved output of sin"}));
  // Offloading the dot keeps a host copy of it instead of the device value.
  V off = residuals_of(offload_dot_with_no_batch_dims(fy::MemoryKind::device, fy::MemoryKind::pinned_host));
  EXPECT_EQ(off.back(), "f64[2,3]{pinned_host} offloaded output of dot_general");
}

// A softmax's row sums, broadcast to the rows' shape, are read by the forward pass (the division)
// and by the division's VJP. Saving the broadcast would keep a rows-sized residual; the backward
// pass keeps the f64[2] sums instead and broadcasts them again.
TEST(Checkpoint, ABroadcastIsRecomputedFromItsSmallerOperandRatherThanSaved) {
  auto softmax = [](fy::Tensor x) {
    fy::Tensor e = fy::exp(x);
    return e / fy::broadcast_in_dim(fy::sum(e, {1}), {2, 4}, {0});
  };
  auto loss = [&](fy::Tensor x) { return fy::sum(fy::sin(fy::checkpoint(softmax, fy::policies::everything_saveable)(x))); };
  auto res = fy::saved_residuals(loss, fy::ShapeDtype{{2, 4}, fy::DType::f64});
  std::vector<std::string> lines;
  for (const auto& r : res)
    lines.push_back(fy::type_string(r.type.dtype, r.type.shape) + " " + r.decision + " " + r.source);
  using V = std::vector<std::string>;
  EXPECT_EQ(lines, (V{"f64[2,4] saved output of exp", "f64[2] saved output of reduce_sum",
                      "f64[2,4] saved output of div"}));
  fy::testing::expect_gradients_match([&](const Xs& p) { return loss(p[0]); }, fy::testing::random_f64({{2, 4}}, 6));
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

TEST(Checkpoint, NothingSaveableRecomputesTheForwardInTheBackwardProgram) {
  auto train = [](bool prevent_cse) {
    return fy::jit([prevent_cse](fy::Tensor x, fy::Tensor w) {
      return fy::value_and_grad([&](fy::Tensor v) {
        return fy::sum(fy::checkpoint(layer, fy::policies::nothing_saveable, prevent_cse)(x, v));
      })(w);
    });
  };
  fy::Lowered lowered = train(true).lower(fy::ShapeDtype{{2, 4}}, fy::ShapeDtype{{4, 3}});
  std::string text = lowered.as_text();
  // The forward dot and tanh appear twice: in the forward pass, and recomputed (marked) in the
  // backward pass from the checkpoint's inputs.
  EXPECT_EQ(count(text, "= tanh "), 2u) << text;
  EXPECT_EQ(count(text, "= dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %0, %1"), 2u);
  EXPECT_THAT(text, HasSubstr("= dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %0, %1 : f32[2,3] !remat"));
  EXPECT_EQ(count(text, "tanh %11 : f32[2,3] !remat"), 1u) << text;
  // CSE does not merge the recomputation back into the forward pass...
  EXPECT_EQ(count(lowered.compile().as_text(), "= tanh "), 2u);
  // ...unless prevent_cse is off: then the recomputation is ordinary code, and CSE folds it away.
  std::string merged = train(false).lower(fy::ShapeDtype{{2, 4}}, fy::ShapeDtype{{4, 3}}).compile().as_text();
  EXPECT_EQ(count(merged, "= tanh "), 1u) << merged;
}

TEST(Checkpoint, OffloadPolicyMovesResidualsToHostAndBack) {
  // Three checkpointed layers with the first report's custom policy: each layer's dot output goes
  // to pinned_host in the forward program and comes back to device in the backward program.
  auto f = fy::jit([](fy::Tensor x, std::vector<fy::Tensor> ws) {
    return fy::grad([&](std::vector<fy::Tensor> w) {
      fy::Tensor h = x;
      for (auto& wl : w) h = fy::checkpoint(layer, fy::Policy(custom_offload_policy))(h, wl);
      return fy::sum(h);
    })(ws);
  });
  std::string text =
      f.lower(fy::ShapeDtype{{2, 4}}, std::vector<fy::ShapeDtype>(3, fy::ShapeDtype{{4, 4}})).as_text();
  EXPECT_EQ(count(text, "device_put[dst=pinned_host]"), 3u) << text;
  EXPECT_EQ(count(text, "device_put[dst=device]"), 3u) << text;
  EXPECT_EQ(count(text, "f32[2,4]{pinned_host}"), 3u) << text;  // each host copy is defined once
}

TEST(Checkpoint, SecondReportOffloadsPerScanStepIntoHostMemory) {
  fy::Lowered lowered = fy::testing::second_report(true);
  std::string text = lowered.as_text();
  // The forward scan stacks the named value directly in host memory; the reverse scan's body
  // fetches one slice back per step.
  EXPECT_THAT(text, HasSubstr("f32[2,3]{pinned_host} {"));
  EXPECT_THAT(text, HasSubstr("device_put[dst=device] %2 : f32[3] !remat"));
  std::vector<fy::Array> args = fy::testing::second_report_args();
  auto g = lowered.compile().run(args)[0];
  EXPECT_TRUE(g.equals(fy::testing::second_report(false).compile().run(args)[0]));
}

TEST(Checkpoint, Composes) {
  auto args = fy::testing::random_f64({{2, 4}, {4, 4}, {3, 4, 4}}, 8);
  auto reference = [](const Xs& p, bool checkpointed) {
    using namespace fy::policies;
    auto maybe = [&](auto f, fy::Policy pol) -> std::function<fy::Tensor(fy::Tensor, fy::Tensor)> {
      if (!checkpointed) return f;
      auto c = fy::checkpoint(f, pol);
      return [c](fy::Tensor a, fy::Tensor b) { return c(a, b); };
    };
    // Nested checkpoints with different policies.
    auto inner = maybe(layer, dots_saveable);
    auto outer = maybe([&](fy::Tensor x, fy::Tensor w) { return inner(inner(x, w), w); }, nothing_saveable);
    fy::Tensor y = outer(p[0], p[1]);
    // A scan inside a checkpoint (the whole loop rematerialized).
    auto loop = maybe([](fy::Tensor x, fy::Tensor ws) {
      return fy::scan([](fy::Tensor h, fy::Tensor w) { return std::pair{layer(h, w), fy::Tensor{}}; }, x, ws).carry;
    }, save_only_these_names({"a"}));
    y = loop(y, p[2]);
    // Several inputs and outputs.
    auto two = [&](fy::Tensor a, fy::Tensor b) { return std::pair{a * b, fy::sin(a) + b}; };
    std::pair<fy::Tensor, fy::Tensor> r = checkpointed ? fy::checkpoint(two, everything_saveable)(y, y) : two(y, y);
    return fy::sum(r.first) + fy::sum(r.second);
  };
  auto want = fy::testing::ferry_gradients([&](const Xs& p) { return reference(p, false); }, args);
  auto got = fy::testing::ferry_gradients([&](const Xs& p) { return reference(p, true); }, args);
  // Checkpoint boundaries change the order in which cotangents of a value used twice are summed, so
  // the last bits may differ here (the policies test above keeps the order and is exact).
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t j = 0; j < want[i].size(); ++j) EXPECT_NEAR(got[i][j], want[i][j], 1e-14) << i << "," << j;
}

TEST(Checkpoint, RunsForwardOnlyAndOnArrays) {
  auto f = fy::checkpoint([](fy::Tensor x) { return fy::sin(x) * 2.0; });
  auto out = f(fy::full({2}, 0.5, fy::DType::f64));
  EXPECT_DOUBLE_EQ(out[0].to_vector<double>()[0], 2 * std::sin(0.5));
  // remat is the same transformation.
  auto g = fy::jit([](fy::Tensor x) { return fy::grad([](fy::Tensor y) { return fy::sum(fy::remat(fy::sin)(y)); })(x); });
  EXPECT_DOUBLE_EQ(g(fy::full({1}, 0.5, fy::DType::f64))[0].to_vector<double>()[0], std::cos(0.5));
}

TEST(Checkpoint, ErrorsAreInvalidArgument) {
  auto overlap = error_of([] {
    fy::policies::save_and_offload_only_these_names({"a", "b"}, {"b"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host);
  });
  EXPECT_EQ(overlap.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(overlap.message(), HasSubstr("'b' is both saved and offloaded"));
  auto empty = error_of([] { fy::jit([](fy::Tensor x) { return fy::checkpoint_name(x, ""); }).lower(fy::ShapeDtype{{2}}); });
  EXPECT_THAT(empty.message(), HasSubstr("checkpoint_name: the name is empty"));
  auto not_dot = error_of([] {
    fy::jit([](fy::Tensor x) {
      return fy::checkpoint([](fy::Tensor y) { return fy::sin(y); },
                            fy::Policy([](const fy::Equation& e) -> fy::Decision {
                              e.dot_dims();
                              return fy::Saveable{};
                            }))(x);
    }).lower(fy::ShapeDtype{{2}});
  });
  EXPECT_THAT(not_dot.message(), HasSubstr("dot_dims: the equation is sin, not dot_general"));
}

// Issue 32: a policy that keeps the Equations it is given read a freed ir::Program once lowering was
// done (valgrind showed the read; a std::out_of_range escaped). An Equation owns what it exposes, so
// every one kept reads back as it did during the call, after the program, the trace and the
// Lowered are gone. tools/sanitize.sh runs this under valgrind too.
TEST(Checkpoint, EquationsAPolicyKeepsStayValidAfterLowering) {
  struct Seen {
    fy::Primitive prim;
    std::string name, params;
    std::vector<fy::ShapeDtype> in, out;
  };
  auto kept = std::make_shared<std::vector<fy::Equation>>();
  auto seen = std::make_shared<std::vector<Seen>>();
  fy::Policy keeper(
      [kept, seen](const fy::Equation& e) -> fy::Decision {
        kept->push_back(e);
        seen->push_back({e.primitive(), e.name(), e.params_text(), e.input_types(), e.output_types()});
        return fy::Recompute{};
      },
      "keeper");
  {
    auto f = fy::jit([&](fy::Tensor x, fy::Tensor w) {
      return fy::grad([&](fy::Tensor v) {
        return fy::sum(fy::checkpoint([](fy::Tensor a, fy::Tensor b) {
          return fy::sin(fy::checkpoint_name(fy::matmul(a, b), "proj"));
        }, keeper)(x, v));
      })(w);
    });
    fy::Lowered lowered = f.lower(fy::ShapeDtype{{2, 3}}, fy::ShapeDtype{{3, 4}});
    (void)lowered.compile();
  }  // the traced programs are freed here
  ASSERT_EQ(kept->size(), seen->size());
  ASSERT_GE(kept->size(), 3u);
  bool saw_dot = false, saw_name = false;
  for (size_t i = 0; i < kept->size(); ++i) {
    const fy::Equation& e = (*kept)[i];
    const Seen& s = (*seen)[i];
    EXPECT_EQ(e.primitive(), s.prim);
    EXPECT_EQ(e.name(), s.name);
    EXPECT_EQ(e.params_text(), s.params);
    ASSERT_EQ(e.input_types().size(), s.in.size());
    for (size_t k = 0; k < s.in.size(); ++k) EXPECT_EQ(e.input_types()[k].shape, s.in[k].shape);
    ASSERT_EQ(e.output_types().size(), s.out.size());
    for (size_t k = 0; k < s.out.size(); ++k) EXPECT_EQ(e.output_types()[k].dtype, s.out[k].dtype);
    if (e.primitive() == fy::prim::dot_general) {
      saw_dot = true;
      EXPECT_EQ(e.dot_dims().lhs_contracting, std::vector<int64_t>{1});
      EXPECT_EQ(e.input_types()[0].shape, (fy::Shape{2, 3}));
    } else {
      EXPECT_EQ(fy::testing::error_of([&] { e.dot_dims(); }).code(), fy::ErrorCode::invalid_argument);
    }
    if (e.name() == "proj") saw_name = true;
  }
  EXPECT_TRUE(saw_dot);
  EXPECT_TRUE(saw_name);
  // A copy outlives the vector it was kept in.
  fy::Equation copy = kept->front();
  kept->clear();
  EXPECT_EQ(copy.primitive(), seen->front().prim);
}

}  // namespace
