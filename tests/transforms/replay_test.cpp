// The one replay (transforms/emit.h): an equation rebound into a trace keeps every annotation
// (name, checkpoint decision, rematerialized, automatic), through emit and through linearization's
// forward pass, which replays what it differentiates. Golden IR text.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "trace/tracer.h"
#include "transforms/emit.h"
#include "transforms/linearize.h"

namespace ferry::transforms {
namespace {

const char* kAnnotated =
    "program @p(%0: f32[2]) {\n"
    "  %1 = sin %0 : f32[2] @\"h\" !save\n"
    "  %2 = cos %1 : f32[2] !remat !auto\n"
    "  %3 = exp %2 : f32[2] !offload(device,pinned_host)\n"
    "  %4 = tanh %3 : f32[2] !automatic\n"
    "  return %4\n"
    "}\n";

// Traces `body` on fresh inputs of p's input types and prints what it recorded.
template <class F> std::string traced(const ir::Program& p, F body) {
  auto tracer = std::make_shared<detail::Tracer>(p.name);
  std::vector<Tensor> inputs;
  for (ir::ValueId v : p.inputs) inputs.push_back(tracer->add_input(p.type(v)));
  detail::push_tracer(tracer);
  std::vector<Tensor> outs;
  try {
    outs = body(inputs);
  } catch (...) {
    detail::pop_tracer();
    throw;
  }
  detail::pop_tracer();
  return ir::print(*tracer->finish(outs));
}

TEST(Replay, EmitCarriesEveryAnnotation) {
  auto p = ir::parse(kAnnotated);
  EXPECT_EQ(traced(*p, [&](const std::vector<Tensor>& in) { return emit(*p, in); }), kAnnotated);
}

TEST(Replay, LinearizationsForwardPassCarriesEveryAnnotation) {
  std::shared_ptr<const ir::Program> p = ir::parse(kAnnotated);
  EXPECT_EQ(traced(*p, [&](const std::vector<Tensor>& in) { return Linearization(p, in).outputs(); }), kAnnotated);
}

}  // namespace
}  // namespace ferry::transforms
