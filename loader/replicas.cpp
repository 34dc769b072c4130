// Replicas (replicas.h): one Model per device; batch shards run on threads of their own.
#include "amber/loader/replicas.h"

#include <exception>
#include <thread>

#include "amber/graph/graph.h"
#include "amber/schema/eager.h"

namespace amber {
namespace {

// The one dim of io that depends on the batch size as coef * N (split_batch cuts and joins
// there), or -1 with why in `why`.
int batch_dim(const IOInfo& io, std::string& why) {
  int dim = -1;
  for (size_t d = 0; d < io.dims.size(); ++d) {
    const graph::SymInt& s = io.dims[d];
    if (!(s.symbols() & graph::symbol_bit('N'))) continue;
    char symbol = 0;
    int64_t coef = 0;
    if (dim >= 0 || !s.affine_in(&symbol, &coef) || s.value != 0 || coef < 0) {
      why = str(io.name, " ", io.shape, " does not have exactly one dim proportional to the batch");
      return -1;
    }
    dim = int(d);
  }
  if (dim < 0) why = str(io.name, " ", io.shape, " does not depend on the batch size");
  return dim;
}

}  // namespace

template <typename Load>
Replicas Replicas::load_with(const ReplicaOptions& options, const std::string& source, Load load_one) {
  AMBER_CHECK(!options.devices.empty(), "Replicas: no devices given");
  Replicas r;
  for (const Device& d : options.devices) {
    LoadOptions lo = options.load;
    lo.device = d;
    try {
      r.replicas_.push_back(load_one(lo));
    } catch (const Error& e) {
      throw Error(str("Replicas: loading the replica on ", d, " failed: ", e.what()));
    }
  }
  r.policy_ = options.policy;
  if (r.policy_ == ReplicaPolicy::split_batch) {
    const Model& m = r.replicas_[0];
    AMBER_CHECK((m.graph().symbols() & graph::symbol_bit('N')),
                "Replicas: split_batch needs a model traced with a dynamic batch (", source,
                " has static shapes); use ReplicaPolicy::round_robin");
    std::string why;
    for (const IOInfo& io : m.inputs()) {
      r.input_batch_dim_.push_back(batch_dim(io, why));
      AMBER_CHECK(r.input_batch_dim_.back() >= 0, "Replicas: cannot split the batch: input ", why);
    }
    for (const IOInfo& io : m.outputs()) {
      r.output_batch_dim_.push_back(batch_dim(io, why));
      AMBER_CHECK(r.output_batch_dim_.back() >= 0, "Replicas: cannot join the shards: output ", why);
    }
  }
  return r;
}

Replicas Replicas::load(const std::string& path, const ReplicaOptions& options) {
  return load_with(options, path, [&](const LoadOptions& lo) { return amber::load(path, lo); });
}

Replicas Replicas::load(std::span<const uint8_t> bytes, const ReplicaOptions& options) {
  return load_with(options, "<buffer>", [&](const LoadOptions& lo) { return amber::load(bytes, lo); });
}

std::vector<Tensor> Replicas::forward(const std::vector<Tensor>& inputs) const {
  AMBER_CHECK(!replicas_.empty(), "Replicas: empty (get one from Replicas::load)");
  if (policy_ == ReplicaPolicy::round_robin) {
    const size_t k = size_t(next_->fetch_add(1, std::memory_order_relaxed) % replicas_.size());
    return replicas_[k].forward(inputs);
  }
  return split(inputs);
}

std::vector<Tensor> Replicas::split(const std::vector<Tensor>& inputs) const {
  const Model& first = replicas_[0];
  int64_t n = 0;
  try {
    const graph::SymValues sizes = graph::symbol_values(first.graph(), inputs);
    graph::check_inputs(first.graph(), inputs, sizes);
    n = sizes.get('N');
  } catch (const Error& e) {
    throw Error(str("Replicas: forward: ", e.what()));
  }
  const int64_t shards = std::max<int64_t>(1, std::min<int64_t>(n, int64_t(replicas_.size())));
  // Shard i: rows [start_i, start_i + len_i) of the batch, on replica i.
  const size_t count = static_cast<size_t>(shards);
  std::vector<std::vector<Tensor>> shard_in(count), shard_out(count);
  for (int64_t i = 0, start = 0; i < shards; ++i) {
    const int64_t len = n / shards + (i < n % shards ? 1 : 0);
    for (size_t k = 0; k < inputs.size(); ++k)
      shard_in[size_t(i)].push_back(inputs[k].slice(input_batch_dim_[k], start, start + len, 1, SrcLoc::none()));
    start += len;
  }
  std::vector<std::exception_ptr> errors(count);
  auto run = [&](int64_t i) {
    try {
      shard_out[size_t(i)] = replicas_[size_t(i)].forward(shard_in[size_t(i)], CallOptions{.outputs_on_host = true});
    } catch (...) {
      errors[size_t(i)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int64_t i = 1; i < shards; ++i) threads.emplace_back(run, i);
  run(0);
  for (std::thread& t : threads) t.join();
  for (int64_t i = 0; i < shards; ++i)
    if (errors[size_t(i)]) {
      try {
        std::rethrow_exception(errors[size_t(i)]);
      } catch (const Error& e) {
        throw Error(str("Replicas: the shard on ", replicas_[size_t(i)].device(), " failed: ", e.what()));
      }
    }
  if (shards == 1) return std::move(shard_out[0]);
  std::vector<Tensor> out;
  for (size_t o = 0; o < shard_out[0].size(); ++o) {
    std::vector<Tensor> parts;
    for (int64_t i = 0; i < shards; ++i) parts.push_back(shard_out[size_t(i)][o]);
    out.push_back(cat(parts, output_batch_dim_[o], SrcLoc::none()));
  }
  return out;
}

}  // namespace amber
