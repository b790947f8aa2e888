// The non-template half of vjp/grad.
#include <fmt/format.h>

#include "ferry/autodiff.h"
#include "ferry/error.h"
#include "transforms/emit.h"
#include "transforms/linearize.h"

namespace ferry::detail {

class Linearized {
 public:
  Linearized(transforms::ClosedProgram closed, std::vector<Tensor> primals)
      : closed_(std::move(closed)), primals_(std::move(primals)), lin_(closed_.program, all_inputs()) {}

  const transforms::Linearization& lin() const { return lin_; }
  const std::vector<Tensor>& primals() const { return primals_; }

 private:
  std::vector<Tensor> all_inputs() const {
    std::vector<Tensor> in = primals_;
    in.insert(in.end(), closed_.captures.begin(), closed_.captures.end());
    return in;
  }
  transforms::ClosedProgram closed_;
  std::vector<Tensor> primals_;
  transforms::Linearization lin_;
};

std::shared_ptr<const Linearized> linearize(const FlatFn& fn, const std::vector<Tensor>& primals,
                                            std::vector<Tensor>& outputs) {
  std::vector<ir::Type> types;
  for (size_t i = 0; i < primals.size(); ++i) {
    if (!primals[i].defined())
      throw Error(ErrorCode::invalid_argument, fmt::format("vjp: primal {} is an undefined Tensor", i));
    types.push_back(transforms::type_of(primals[i]));
  }
  auto lin = std::make_shared<const Linearized>(transforms::trace_closed("vjp", types, fn), primals);
  outputs = lin->lin().outputs();
  return lin;
}

std::vector<Tensor> pullback(const Linearized& lin, const std::vector<Tensor>& output_cotangents) {
  std::vector<Tensor> cts = lin.lin().backward(output_cotangents);
  cts.resize(lin.primals().size());  // drop the captures' cotangents: they are not arguments
  for (size_t i = 0; i < cts.size(); ++i)
    if (!cts[i].defined()) cts[i] = zeros_like(lin.primals()[i]);
  return cts;
}

void check_scalar_output(const Tensor& t, const char* what) {
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, fmt::format("{}: the function returned an undefined Tensor", what));
  if (t.rank() != 0 || !is_floating(t.dtype()))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: the function must return a floating-point scalar, got {} (use vjp for other outputs, "
                            "or reduce the output with sum or mean)", what, t.type_string()));
}

}  // namespace ferry::detail
