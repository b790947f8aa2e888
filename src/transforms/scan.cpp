// scan's front end: trace the body once, record one scan equation.
#include <fmt/format.h>

#include "ferry/error.h"
#include "ferry/scan.h"
#include "ir/params.h"
#include "trace/tracer.h"
#include "transforms/emit.h"

namespace ferry::detail {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, "scan: " + msg); }

std::vector<Tensor> defined_only(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts)
    if (t.defined()) out.push_back(t);
  return out;
}

// Puts `values` back where `mask` has defined tensors; undefined elsewhere.
std::vector<Tensor> refill(const std::vector<Tensor>& mask, const std::vector<Tensor>& values, size_t& pos) {
  std::vector<Tensor> out;
  for (const Tensor& m : mask) out.push_back(m.defined() ? values.at(pos++) : Tensor());
  return out;
}

}  // namespace

std::vector<Tensor> scan_impl(const ScanBodyFn& body, const std::vector<Tensor>& init, const std::vector<Tensor>& xs,
                              int64_t length, bool reverse) {
  // -1 alone means "from xs": any other negative length is a mistake, not a request to infer it.
  if (length < -1)
    invalid(fmt::format("length {} is negative; give the number of steps (0 or more), or -1 to take it from xs' "
                        "leading axis",
                        length));
  std::vector<ir::Type> in_types;
  for (const Tensor& c : init)
    if (c.defined()) in_types.push_back(transforms::type_of(c));
  size_t num_carry = in_types.size();
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined()) continue;
    ir::Type t = transforms::type_of(xs[i]);
    if (t.rank() == 0) invalid(fmt::format("xs leaf {} is a scalar {}; each needs a leading axis to scan over", i, ir::to_string(t)));
    if (length < 0) length = t.shape[0];
    if (t.shape[0] != length)
      invalid(fmt::format("xs leaf {} ({}) has leading axis {} but the scan has length {}", i, ir::to_string(t), t.shape[0], length));
    t.shape.erase(t.shape.begin());
    in_types.push_back(t);
  }
  if (length < 0) invalid("there are no xs to take the length from, so give length (the number of steps)");
  size_t num_xs = in_types.size() - num_carry;

  std::vector<Tensor> y_mask;
  transforms::ClosedProgram closed = transforms::trace_closed("scan_body", in_types, [&](const std::vector<Tensor>& in) {
    size_t pos = 0;
    std::vector<Tensor> carry = refill(init, in, pos);
    std::vector<Tensor> x = refill(xs, in, pos);
    std::vector<Tensor> out = body(carry, x);
    for (size_t i = 0; i < init.size(); ++i) {
      if (out[i].defined() != init[i].defined())
        invalid(fmt::format("carry leaf {} is {} in init but {} from the body", i, init[i].type_string(), out[i].type_string()));
      if (init[i].defined() && transforms::type_of(out[i]) != transforms::type_of(init[i]))
        invalid(fmt::format("carry leaf {} is {} in init but {} from the body", i, init[i].type_string(), out[i].type_string()));
    }
    y_mask.assign(out.begin() + static_cast<std::ptrdiff_t>(init.size()), out.end());
    return defined_only(out);
  });

  std::vector<Tensor> inputs = defined_only(init);
  for (const Tensor& x : xs)
    if (x.defined()) inputs.push_back(x);
  inputs.insert(inputs.end(), closed.captures.begin(), closed.captures.end());
  ir::ScanParams params{length, reverse, static_cast<int64_t>(num_carry), static_cast<int64_t>(num_xs)};
  std::vector<Tensor> out =
      current_tracer("scan").bind(Primitive::scan, params, inputs, {}, {closed.program});
  size_t pos = 0;
  std::vector<Tensor> result = refill(init, out, pos);
  std::vector<Tensor> ys = refill(y_mask, out, pos);
  result.insert(result.end(), ys.begin(), ys.end());
  return result;
}

}  // namespace ferry::detail
