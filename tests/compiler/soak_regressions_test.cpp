// Programs that soaks of the random-program property test (tests/property, tools/soak.sh) found
// wrong, kept as IR text: data/soak/seed_N.ir is the shrunk program's gradient with its
// checkpoints, seed_N.plain.ir the same gradient without them.
//
// All of them were one bug in buffer assignment: a scan body that copies a device value to host
// memory and returns the copy as a per-step output had that copy "postponed" (done by the scan
// runner into its stacked output after the step), even when the body also read the host copy (to
// fetch it back) or returned it twice. Those other uses then read a buffer nothing had written:
// wrong gradients, and results that changed from run to run (the text round-trip failures).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/lower_copies.h"
#include "compiler/memory_plan.h"
#include "ferry/ferry.h"
#include "ir/parser.h"
#include "support/gradient_check.h"

namespace ferry {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<Shape> input_shapes(const Compiled& c) {
  std::vector<Shape> shapes;
  for (const ShapeDtype& s : c.input_specs()) shapes.push_back(s.shape);
  return shapes;
}

class SoakRegression : public ::testing::TestWithParam<int> {};

TEST_P(SoakRegression, GradientsEqualThoseWithoutCheckpointsAndRepeat) {
  const std::string base = std::string(FERRY_TEST_DATA) + "/compiler/data/soak/seed_" + std::to_string(GetParam());
  Compiled checkpointed = parse_program(read_file(base + ".ir")).compile();
  Compiled plain = parse_program(read_file(base + ".plain.ir")).compile();
  for (uint32_t args_seed : {1u, 2u, 3u}) {
    std::vector<Array> args = testing::random_f64(input_shapes(plain), args_seed);
    std::vector<Array> got = checkpointed.run(args), again = checkpointed.run(args), want = plain.run(args);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(got[i].equals(again[i])) << "output " << i << " changed between two runs";
      std::vector<double> g = got[i].to_vector<double>(), w = want[i].to_vector<double>();
      double scale = 1;
      for (double x : w) scale = std::max(scale, std::abs(x));
      for (size_t j = 0; j < w.size(); ++j)
        EXPECT_NEAR(g[j], w[j], 1e-12 * scale) << "output " << i << " element " << j << " (arguments seed " << args_seed << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SoakRegression, ::testing::Values(66979, 125773, 189437, 304239),
                         [](const auto& info) { return "seed_" + std::to_string(info.param); });

// The smallest form: the host copy of a computed value is both a per-step output and fetched back.
// The scan runner must not take over that copy, and the body must compute tanh(tanh(x)).
TEST(SoakRegression, AHostOutputTheBodyAlsoReadsIsNotStreamed) {
  const std::string text =
      "program @p(%0: f64[1]) {\n"
      "  %1, %2, %3, %4 = scan[length=1, reverse=true, num_carry=2, num_xs=0] %0, %0 : f64[1], f64[1], f64[1,1], f64[1,1]{unpinned_host} {\n"
      "    program @body(%0: f64[1], %1: f64[1]) {\n"
      "      %2 = tanh %1 : f64[1]\n"
      "      %3 = device_put[dst=unpinned_host] %2 : f64[1]{unpinned_host}\n"
      "      %4 = device_put[dst=device] %3 : f64[1]\n"
      "      %5 = tanh %4 : f64[1]\n"
      "      return %5, %5, %5, %3\n"
      "    }\n"
      "  }\n"
      "  return %2, %4\n"
      "}\n";
  std::vector<Array> out = parse_program(text).compile().run({Array::from(std::vector<double>{0.3}, {1})});
  EXPECT_DOUBLE_EQ(out[0].to_vector<double>()[0], std::tanh(std::tanh(0.3)));
  EXPECT_DOUBLE_EQ(out[1].to_vector<double>()[0], std::tanh(0.3));
}

// find_streams on its own: a host ys output is postponed only when it is the copy's one use.
TEST(SoakRegression, FindStreamsPostponesOnlyACopyWithNoOtherUse) {
  auto postponed = [](bool fetch_back, const std::string& ret) {
    auto p = ir::parse(std::string("program @body(%0: f64[4]) {\n"
                                   "  %1 = sin %0 : f64[4]\n"
                                   "  %2 = device_put[dst=pinned_host] %1 : f64[4]{pinned_host}\n") +
                       (fetch_back ? "  %3 = device_put[dst=device] %2 : f64[4]\n" : "") + "  return " + ret + "\n}\n");
    compiler::lower_copies(*p);
    return compiler::find_streams(*p, /*num_carry=*/1, /*num_xs=*/0).postponed.size();
  };
  EXPECT_EQ(postponed(false, "%0, %2"), 1u);     // the host copy is only returned: streamed
  EXPECT_EQ(postponed(true, "%3, %2"), 0u);      // it is also fetched back
  EXPECT_EQ(postponed(false, "%0, %2, %2"), 0u); // it is returned twice
}

}  // namespace
}  // namespace ferry
