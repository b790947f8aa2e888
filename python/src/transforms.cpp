// The transformations on traced Python functions: vjp, checkpoint (with ferry's policies and the
// policy that carries a JAX policy's per-equation decisions), scan, cond, while_loop, custom_vjp.
// A Python function here takes and returns lists of Tensors; None stands for an undefined Tensor
// (a zero cotangent, no per-step output).
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace ferry::python {

namespace {

nb::list to_list(const std::vector<Tensor>& ts) {
  nb::list out;
  for (const Tensor& t : ts) out.append(t.defined() ? nb::cast(t) : nb::none());
  return out;
}

std::vector<Tensor> from_list(nb::handle obj, const char* what) {
  if (!nb::isinstance<nb::sequence>(obj))
    throw Error(ErrorCode::internal, std::string(what) + ": the function did not return a list of Tensors");
  std::vector<Tensor> out;
  for (nb::handle h : obj) out.push_back(h.is_none() ? Tensor() : nb::cast<Tensor>(h));
  return out;
}

// The decision a JAX policy made for an equation, carried by the name of the checkpoint_name that
// wraps the equation's outputs: "<name>@jax:save" or "<name>@jax:offload:<src>:<dst>" (the
// converter, python/ferry/jax/_policies.py, writes them). Everything else is recomputed, as JAX
// recomputes what its policy does not save.
Decision decode(const Equation& e) {
  if (e.primitive() != Primitive::checkpoint_name) return Recompute{};
  const std::string& name = e.name();
  const size_t at = name.rfind("@jax:");
  if (at == std::string::npos) return Recompute{};
  const std::string what = name.substr(at + 5);
  if (what == "save") return Saveable{};
  if (what.rfind("offload:", 0) == 0) {
    const std::string kinds = what.substr(8);
    const size_t colon = kinds.find(':');
    if (colon != std::string::npos)
      return Offloadable{parse_kind(kinds.substr(0, colon)), parse_kind(kinds.substr(colon + 1))};
  }
  throw Error(ErrorCode::internal, "checkpoint: the JAX policy's decision '" + what + "' is not one ferry knows");
}

// vjp's pullback, callable from Python while the trace that made it is active.
struct Pullback {
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
};

}  // namespace

TensorFn tensor_fn(nb::callable fn, const char* what) {
  return [fn = std::move(fn), what](const std::vector<Tensor>& args) {
    nb::gil_scoped_acquire gil;
    return from_list(fn(to_list(args)), what);
  };
}

void init_transforms(nb::module_& m) {
  nb::class_<Policy>(m, "Policy", "A checkpoint policy")
      .def_prop_ro("name", &Policy::name);
  m.def("policy", [](const std::string& name) -> Policy {
    if (name == "everything_saveable") return policies::everything_saveable;
    if (name == "nothing_saveable") return policies::nothing_saveable;
    if (name == "dots_saveable") return policies::dots_saveable;
    if (name == "dots_with_no_batch_dims_saveable") return policies::dots_with_no_batch_dims_saveable;
    if (name == "offload_dot_with_no_batch_dims") return policies::offload_dot_with_no_batch_dims(MemoryKind::device, MemoryKind::pinned_host);
    if (name == "automatic") return policies::automatic;
    throw Error(ErrorCode::invalid_argument, "unknown ferry policy '" + name + "'");
  }, "A built-in policy by its name");
  m.def("jax_policy", [](const std::string& name) { return Policy(decode, name); },
        "The policy that reads a JAX policy's decisions from the converted equations' names");

  nb::class_<Pullback>(m, "Pullback")
      .def("__call__", [](const Pullback& pb, nb::handle cts) { return to_list(pb.fn(from_list(cts, "pullback"))); });
  m.def("vjp", [](nb::callable fn, nb::handle primals) {
    TensorFn f = tensor_fn(std::move(fn), "vjp");
    auto [outs, pb] = vjp([&](const std::vector<Tensor>& xs) { return f(xs); }, from_list(primals, "vjp"));
    Pullback pullback{[pb](const std::vector<Tensor>& cts) { return std::get<0>(pb(cts)); }};
    return std::pair{to_list(outs), pullback};
  });
  m.def("checkpoint", [](nb::callable fn, nb::handle args, const Policy& policy, bool prevent_cse) {
    return to_list(detail::checkpoint_impl(tensor_fn(std::move(fn), "checkpoint"), from_list(args, "checkpoint"),
                                           policy, prevent_cse));
  });
  m.def("scan", [](nb::callable body, nb::handle init, nb::handle xs, int64_t length, bool reverse) {
    TensorFn f = tensor_fn(std::move(body), "scan");
    detail::ScanBodyFn b = [f](const std::vector<Tensor>& carry, const std::vector<Tensor>& x) {
      std::vector<Tensor> args = carry;
      args.insert(args.end(), x.begin(), x.end());
      return f(args);
    };
    return to_list(detail::scan_impl(b, from_list(init, "scan"), from_list(xs, "scan"), length, reverse));
  });
  m.def("cond", [](const Tensor& index, std::vector<nb::callable> branches, nb::handle operands) {
    std::vector<detail::BranchFn> fns;
    for (nb::callable& b : branches) fns.push_back(tensor_fn(std::move(b), "cond"));
    return to_list(detail::cond_impl(index, fns, from_list(operands, "cond")));
  });
  m.def("while_loop", [](nb::callable cond, nb::callable body, nb::handle init) {
    detail::WhileCondFn c = [cond = std::move(cond)](const std::vector<Tensor>& carry) {
      nb::gil_scoped_acquire gil;
      return nb::cast<Tensor>(cond(to_list(carry)));
    };
    return to_list(detail::while_impl(c, tensor_fn(std::move(body), "while_loop"), from_list(init, "while_loop")));
  });
  m.def("custom_vjp", [](nb::callable f, nb::callable fwd, nb::callable bwd, nb::handle args) {
    TensorFn fn = tensor_fn(std::move(f), "custom_vjp");
    detail::FwdLeafFn fw = [fwd = std::move(fwd)](const std::vector<Tensor>& xs) {
      nb::gil_scoped_acquire gil;
      nb::object r = fwd(to_list(xs));
      return std::pair{from_list(r[0], "custom_vjp fwd"), from_list(r[1], "custom_vjp fwd")};
    };
    detail::BwdLeafFn bw = [bwd = std::move(bwd)](const std::vector<Tensor>& res, const std::vector<Tensor>& cts) {
      nb::gil_scoped_acquire gil;
      return from_list(bwd(to_list(res), to_list(cts)), "custom_vjp bwd");
    };
    return to_list(detail::custom_vjp_impl(fn, fw, bw, from_list(args, "custom_vjp")));
  });
}

}  // namespace ferry::python
