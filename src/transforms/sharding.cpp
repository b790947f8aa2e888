// The traced half of ferry/sharding.h: gathering shards, and AdamW on shards (transforms/optim.cpp's
// adamw_flat, applied to this process's pieces). Host-side sharding of Arrays is in
// driver/sharding.cpp.
#include <fmt/format.h>

#include "ferry/distributed.h"
#include "ferry/error.h"
#include "ferry/sharding.h"
#include "trace/process_axis.h"

namespace ferry::optim {
namespace {

// x flattened and padded with zeros to processes x piece elements.
Tensor padded_flat(const Tensor& x, int64_t processes, int64_t piece) {
  const int64_t size = num_elements(x.shape());
  Tensor f = reshape(x, {size});
  if (processes * piece == size) return f;
  return concatenate({f, constant(0.0, {processes * piece - size}, x.dtype())}, 0);
}

// This process's piece of x (whole on every process).
Tensor my_piece(const Tensor& x, int64_t processes, int64_t piece, const std::string& axis_name) {
  Tensor start = axis_index(axis_name) * static_cast<double>(piece);
  return dynamic_slice(padded_flat(x, processes, piece), {start}, {piece});
}

}  // namespace

int64_t shard_size(int64_t size, int64_t processes) {
  if (processes < 1) throw Error(ErrorCode::invalid_argument, fmt::format("shard_size: {} processes", processes));
  return (size + processes - 1) / processes;
}

Tensor gather(const Tensor& shard, const Shape& shape, const std::string& axis_name) {
  const int64_t n = ferry::detail::process_axis(axis_name, "gather").size;
  const int64_t size = num_elements(shape), piece = shard_size(size, n);
  if (shard.shape() != Shape{piece})
    throw Error(ErrorCode::invalid_argument,
                fmt::format("gather: the shard of a {} over {} processes is [{}], but this one is {}",
                            type_string(shard.dtype(), shape), n, piece, shard.type_string()));
  Tensor whole = all_gather(shard, axis_name, 0, /*tiled=*/true);
  if (n * piece != size) whole = slice(whole, {0}, {size});
  return reshape(whole, shape);
}

namespace detail {

std::vector<Tensor> sharded_adamw_flat(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                       const std::vector<Tensor>& mu, const std::vector<Tensor>& nu, Tensor& count,
                                       const Tensor& lr, const std::string& axis_name, Sharding sharding,
                                       const AdamWOptions& options, const std::vector<std::string>& paths,
                                       std::vector<Tensor>& new_mu, std::vector<Tensor>& new_nu) {
  const int64_t n = ferry::detail::process_axis(axis_name, "sharded_adamw").size;
  if (params.size() != grads.size())
    throw Error(ErrorCode::invalid_argument, fmt::format("sharded_adamw: {} parameters but {} gradients",
                                                         params.size(), grads.size()));
  std::vector<Tensor> p_in, g_in;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const Tensor& g = grads[i];
    if (g.shape() != p.shape() || g.dtype() != p.dtype())
      throw Error(ErrorCode::invalid_argument, fmt::format("sharded_adamw: parameter {} is {} but its gradient is {}", i,
                                                           p.type_string(), g.type_string()));
    const int64_t piece = shard_size(num_elements(p.shape()), n);
    switch (sharding) {
      case Sharding::replicated:
        p_in.push_back(p);
        g_in.push_back(pmean(g, axis_name));
        break;
      case Sharding::optimizer_state:  // the whole average, of which this process takes its piece
        p_in.push_back(my_piece(p, n, piece, axis_name));
        g_in.push_back(my_piece(pmean(g, axis_name), n, piece, axis_name));
        break;
      case Sharding::gradients:  // only this process's piece of the sum arrives
        p_in.push_back(my_piece(p, n, piece, axis_name));
        g_in.push_back(psum_scatter(padded_flat(g, n, piece), axis_name, 0, /*tiled=*/true) * (1.0 / static_cast<double>(n)));
        break;
      case Sharding::parameters:  // shards already; the gradient of a gather is the sum of the processes'
        if (p.shape() != Shape{piece} && p.rank() != 1)
          throw Error(ErrorCode::invalid_argument,
                      fmt::format("sharded_adamw: under Sharding::parameters parameter {} must be a shard (1-D), "
                                  "not {}",
                                  i, p.type_string()));
        p_in.push_back(p);
        g_in.push_back(g * (1.0 / static_cast<double>(n)));
        break;
    }
  }
  AdamWFlat r = adamw_flat(p_in, g_in, mu, nu, count, lr, options, paths);
  count = r.count;
  new_mu = std::move(r.mu);
  new_nu = std::move(r.nu);
  if (sharding == Sharding::replicated || sharding == Sharding::parameters) return r.params;
  std::vector<Tensor> whole;
  for (size_t i = 0; i < params.size(); ++i) whole.push_back(gather(r.params[i], params[i].shape(), axis_name));
  return whole;
}

}  // namespace detail
}  // namespace ferry::optim
