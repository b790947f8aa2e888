// The CPU fused kernel's region of values (runtime/cpu/fused_kernel.cpp): a body that keeps many
// results alive until its block ends (a multi-output group: AdamW's updates of several leaves) used
// to need a region beyond the stack, which the memory plan then held as workspace per thread. Its
// blocks are cut to fit the stack instead; the results are the same.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/parser.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/parallel.h"

namespace ferry::kernel_test {
namespace {

// A fused equation over f32[rows, cols] with `results` outputs, result k = x * (k + 1) + y; with
// `row_sum`, one more: the sum of each row of x (so that a block holds whole rows of cols).
std::shared_ptr<ir::Program> many_results(int results, int64_t rows, int64_t cols, bool row_sum = false) {
  const std::string t = "f32[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
  std::string types, rets, body;
  int v = 2;
  for (int k = 0; k < results; ++k) {
    body += "      %" + std::to_string(v) + " = constant[value=" + std::to_string(k + 1) + ", dtype=f32, shape=[]] : f32[]\n";
    body += "      %" + std::to_string(v + 1) + " = mul %0, %" + std::to_string(v) + " : " + t + "\n";
    body += "      %" + std::to_string(v + 2) + " = add %" + std::to_string(v + 1) + ", %1 : " + t + "\n";
    types += (k ? ", " : "") + t;
    rets += std::string(k ? ", " : "") + "%" + std::to_string(v + 2);
    v += 3;
  }
  if (row_sum) {
    const std::string r = "f32[" + std::to_string(rows) + "]";
    body += "      %" + std::to_string(v) + " = reduce_sum[axes=[1]] %0 : " + r + "\n";
    types += ", " + r;
    rets += ", %" + std::to_string(v);
  }
  std::string outer_outs;
  for (int k = 0; k < results + (row_sum ? 1 : 0); ++k) outer_outs += std::string(k ? ", " : "") + "%" + std::to_string(2 + k);
  const std::string& outer_rets = outer_outs;
  const std::string text = "program @main(%0: " + t + ", %1: " + t + ") {\n  " + outer_outs + " = fused %0, %1 : " +
                           types + " {\n    program @fused(%0: " + t + ", %1: " + t + ") {\n" + body + "      return " +
                           rets + "\n    }\n  }\n  return " + outer_rets + "\n}\n";
  return ir::parse(text);
}

int64_t workspace_of(const ir::Program& p) {
  const ir::Equation& eq = p.equations.at(0);
  std::vector<const ir::Type*> in, out;
  for (ir::ValueId v : eq.inputs) in.push_back(&p.type(v));
  for (ir::ValueId v : eq.outputs) out.push_back(&p.type(v));
  return runtime::cpu::workspace_size(eq.prim)(eq, in, out);
}

TEST(FusedRegion, ManyResultsFitTheStackInsteadOfTheWorkspace) {
  // 24 results held to the end of a 1,024-element block are 96 KiB: beyond the stack's 64 KiB.
  for (int64_t cols : {64, 256, 512}) {
    const auto p = many_results(24, 1024 / cols * 40 + 3, cols, /*row_sum=*/true);
    EXPECT_EQ(workspace_of(*p), 0) << "cols " << cols;
    const ir::Equation& eq = p->equations.at(0);
    const ir::Type& t = p->type(p->inputs[0]);
    const int64_t n = t.num_elements();
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      x[static_cast<size_t>(i)] = 0.001f * static_cast<float>(i % 977);
      y[static_cast<size_t>(i)] = -0.5f + 0.002f * static_cast<float>(i % 331);
    }
    std::vector<std::vector<float>> results(eq.outputs.size(), std::vector<float>(static_cast<size_t>(n), -1.0f));
    const size_t sums = results.size() - 1;  // the last result: the rows' sums
    const runtime::ConstView in[] = {{x.data(), &t}, {y.data(), &t}};
    std::vector<runtime::MutView> out;
    for (size_t k = 0; k < results.size(); ++k) out.push_back({results[k].data(), &p->type(eq.outputs[k])});
    runtime::Workspace workspace(nullptr, 0);
    runtime::cpu::kernel(eq.prim)(eq, std::span<const runtime::ConstView>(in), std::span<const runtime::MutView>(out),
                                  workspace, {});
    for (int64_t row = 0; row < n / cols; ++row) {
      double want = 0;
      for (int64_t c = 0; c < cols; ++c) want += x[static_cast<size_t>(row * cols + c)];
      ASSERT_NEAR(results[sums][static_cast<size_t>(row)], want, 1e-4 * cols) << "cols " << cols << " row " << row;
    }
    for (size_t k = 0; k < sums; ++k)
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(results[k][static_cast<size_t>(i)],
                  x[static_cast<size_t>(i)] * static_cast<float>(k + 1) + y[static_cast<size_t>(i)])
            << "cols " << cols << " result " << k << " element " << i;
  }
}

TEST(FusedRegion, RowsTooLongToCutStillGetTheirWorkspace) {
  // One row of 4,096 elements is a block of its own: 24 results need 384 KiB per thread, declared.
  const auto p = many_results(24, 3, 4096, /*row_sum=*/true);
  EXPECT_GE(workspace_of(*p), 24 * 4096 * 4 * runtime::cpu::num_threads());
}

}  // namespace
}  // namespace ferry::kernel_test
