// Serving one archive on several devices (the seeds' DataParallel, for inference): Replicas
// loads a model once per device and either splits each call's batch across them, running the
// shards at once and gathering the outputs in order on the host, or routes whole calls to
// the devices in turn. Runtime logic above the device seam: it only uses Model.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "amber/loader/model.h"

namespace amber {

enum class ReplicaPolicy : uint8_t {
  // Each call's batch split into one shard per device (sizes differing by at most one; fewer
  // shards than devices for a small batch), run at once, outputs concatenated in order on the
  // host. Needs a model traced with a dynamic batch.
  split_batch,
  // Each call runs whole on the next device in turn; outputs stay on that device unless
  // LoadOptions::outputs_on_host asks otherwise.
  round_robin,
};

struct ReplicaOptions {
  std::vector<Device> devices;  // one replica each (a device may repeat)
  ReplicaPolicy policy = ReplicaPolicy::split_batch;
  LoadOptions load;  // for every replica; its device is replaced by each of devices
};

class Replicas {
 public:
  // Loads the archive on every device; throws amber::Error naming the device that failed, or
  // why the policy does not fit the model.
  static Replicas load(const std::string& path, const ReplicaOptions& options);
  static Replicas load(std::span<const uint8_t> bytes, const ReplicaOptions& options);

  // Runs one call (safe from many threads at once); inputs as for Model::forward.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) const;

  size_t size() const { return replicas_.size(); }
  const Model& replica(size_t i) const { return replicas_.at(i); }
  ReplicaPolicy policy() const { return policy_; }

 private:
  template <typename Load>
  static Replicas load_with(const ReplicaOptions& options, const std::string& source, Load load_one);
  std::vector<Tensor> split(const std::vector<Tensor>& inputs) const;

  std::vector<Model> replicas_;
  ReplicaPolicy policy_ = ReplicaPolicy::split_batch;
  std::vector<int> input_batch_dim_, output_batch_dim_;  // split_batch: the dim carrying N
  std::shared_ptr<std::atomic<uint64_t>> next_ = std::make_shared<std::atomic<uint64_t>>(0);
};

}  // namespace amber
