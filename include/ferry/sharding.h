// Sharding the training state over the processes (ferry/distributed.h), as ZeRO and FSDP do, for
// AdamW: each process keeps 1/N of the optimizer state (and, under FSDP, of the parameters), and
// the collectives that move the rest are ordinary equations of the compiled step, so the memory
// plan counts their buffers and a checkpoint policy may recompute (gather again) what they gather.
//
// A leaf's shard: the leaf flattened, padded with zeros to a multiple of N elements, and cut into N
// equal pieces; process r holds piece r (1-D, ceil(size / N) elements). Padding is zero, and
// AdamW keeps zeros zero, so it never changes what the real elements compute.
//
//   auto step = fy::jit([&](std::vector<fy::Tensor> p, fy::optim::AdamWState<std::vector<fy::Tensor>> s,
//                           fy::Tensor x) {
//     auto [loss, g] = fy::value_and_grad(loss_fn)(p, x);              // this process's batch
//     auto [p2, s2] = fy::optim::sharded_adamw(p, g, s, 1e-3, "data", fy::optim::Sharding::gradients);
//     return std::tuple{fy::pmean(loss, "data"), p2, s2};
//   });
//   auto state = fy::optim::adamw_init_sharded(params);               // 1/N of the moments
//
// Under Sharding::parameters (FSDP) the step takes the parameters' shards
// (fy::optim::shard(params)), gathers them where the model reads them (gather_params), and
// differentiates with respect to the shards: the gradient of a gather is the sum over the
// processes of their gradients, split the same way (psum_scatter).
#pragma once

#include <string>
#include <vector>

#include "ferry/array.h"
#include "ferry/optim.h"
#include "ferry/tensor.h"
#include "ferry/tree.h"

namespace ferry::optim {

enum class Sharding {
  replicated,       // data parallelism: the gradients averaged, every process updates everything
  optimizer_state,  // ZeRO-1: gradients averaged in full, each process updates its shard
  gradients,        // ZeRO-2: gradients reduce-scattered (each process receives only its shard)
  parameters,       // FSDP (ZeRO-3): parameters, gradients and state kept as shards
};

// The elements of the shard of a leaf of `size` elements over `processes` processes.
int64_t shard_size(int64_t size, int64_t processes);

// This process's shard of x (distributed::process_index() of process_count()).
Array shard(const Array& x);
// The whole value of a leaf from all processes' shards, inside a traced function: all_gather of
// the shards, the padding cut off, reshaped to `shape`.
Tensor gather(const Tensor& shard, const Shape& shape, const std::string& axis_name);

namespace detail {
std::vector<Tensor> sharded_adamw_flat(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                       const std::vector<Tensor>& mu, const std::vector<Tensor>& nu, Tensor& count,
                                       const Tensor& lr, const std::string& axis_name, Sharding sharding,
                                       const AdamWOptions& options, const std::vector<std::string>& paths,
                                       std::vector<Tensor>& new_mu, std::vector<Tensor>& new_nu);
}  // namespace detail

// Every leaf's shard (a tree of Arrays).
template <class P> P shard(const P& params) {
  return ferry::detail::map_leaves<Array>(params, [](const Array& x) { return shard(x); });
}

// The AdamW state before the first update, for parameters sharded over the processes: moments of
// the shards' size (Sharding::optimizer_state, gradients and parameters). For replicated, use
// adamw_init.
template <class P> AdamWState<P> adamw_init_sharded(const P& params) {
  AdamWState<P> s;
  s.count = Array::scalar<int32_t>(0);
  auto zero = [](const Array& x) { return zeros({shard(x).size()}, x.dtype()); };
  s.mu = ferry::detail::map_leaves<Array>(params, zero);
  s.nu = ferry::detail::map_leaves<Array>(params, zero);
  return s;
}

// Every leaf gathered (gather) into its whole value; `shapes` are the leaves' shapes, in order.
template <class P> P gather_params(const P& shards, const std::vector<Shape>& shapes, const std::string& axis_name) {
  size_t i = 0;
  return ferry::detail::map_leaves<Tensor>(shards, [&](const Tensor& s) { return gather(s, shapes.at(i++), axis_name); });
}

// One AdamW update (as adamw) by processes that share the state as `sharding` says. `grads` are
// this process's gradients (of its batch): they are averaged over the processes here. Under
// replicated, optimizer_state and gradients, `params` and `grads` are whole and the new parameters
// returned are whole (gathered from the processes' updated shards); under parameters, `params`,
// `grads` (with respect to the shards) and the new parameters are shards. The state is the
// adamw_init_sharded one, except under replicated (adamw_init's).
template <class P>
std::pair<P, AdamWState<P>> sharded_adamw(const P& params, const P& grads, const AdamWState<P>& state, const Tensor& lr,
                                          const std::string& axis_name, Sharding sharding,
                                          const AdamWOptions& options = {}) {
  using ferry::detail::flat;
  using ferry::detail::unflatten_all;
  std::vector<std::string> paths;
  if (options.decay) paths = ferry::detail::tree_def(params).leaf_paths();
  Tensor count = state.count;
  std::vector<Tensor> mu, nu;
  std::vector<Tensor> p = detail::sharded_adamw_flat(flat(params), flat(grads), flat(state.mu), flat(state.nu), count, lr,
                                                     axis_name, sharding, options, paths, mu, nu);
  AdamWState<P> s{count, unflatten_all(state.mu, mu), unflatten_all(state.nu, nu)};
  return {unflatten_all(params, p), std::move(s)};
}
template <class P>
std::pair<P, AdamWState<P>> sharded_adamw(const P& params, const P& grads, const AdamWState<P>& state, double lr,
                                          const std::string& axis_name, Sharding sharding,
                                          const AdamWOptions& options = {}) {
  return sharded_adamw(params, grads, state, detail::scalar_like_lr(lr), axis_name, sharding, options);
}

}  // namespace ferry::optim
