#include "engine/parallel/remote_ranks.h"

#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/core/failpoint.h"
#include "engine/parallel/remote_drafter.h"

namespace ninfer {

GroupSetup group_setup(const TpSetup& setup, const Artifact& artifact, const ModelConfig& config) {
  return GroupSetup{.tp = setup.tp,
                    .kv_block_size = setup.kv.block_size,
                    .kv_blocks = setup.kv.num_blocks,
                    .kv_dtype = static_cast<uint8_t>(setup.kv.dtype),
                    .state_slots = setup.state_slots,
                    .state_checkpoints = setup.state_checkpoints,
                    .state_extra_rows = setup.state_extra_rows,
                    .nvfp4_activations = static_cast<uint8_t>(setup.backend.nvfp4_activations),
                    .bf16_activations = static_cast<uint8_t>(setup.backend.bf16_activations),
                    .backend = static_cast<uint8_t>(setup.backend.kind),
                    .artifact_bytes = artifact.file_bytes(),
                    .hidden_size = config.hidden_size,
                    .num_layers = config.num_layers,
                    .vocab_size = config.vocab_size};
}

RemoteRanks::RemoteRanks(GlooGroup& group, const GroupSetup& setup, std::chrono::milliseconds ready_timeout,
                         std::function<void(const std::string& why)> on_lost, std::chrono::milliseconds idle_check)
    : group_(group), on_lost_(std::move(on_lost)) {
  if (group.rank() != 0) fail(ErrorKind::kInternal, "RemoteRanks on rank {}: only rank 0 drives the group", group.rank());
  std::vector<char> bytes = encode_setup(setup);
  group_.broadcast_bytes(bytes, 0, ready_timeout);
  spdlog::info("tensor parallel: waiting for {} follower process(es) to load their shards", group_.size() - 1);
  group_.barrier(ready_timeout);
  spdlog::info("tensor parallel: all {} ranks ready", group_.size());
  last_sent_ = std::chrono::steady_clock::now();
  watcher_ = std::thread([this, idle_check] { watch(idle_check); });
}

RemoteRanks::~RemoteRanks() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  watcher_.join();
  std::lock_guard lock(mu_);
  if (!broken_.empty()) return;
  try {
    send(StepMessage::stop(), std::chrono::seconds(10));
  } catch (const std::exception& e) {
    spdlog::warn("tensor parallel: could not tell the followers to stop: {}", e.what());
  }
}

void RemoteRanks::lost(const std::string& why) {
  broken_ = why;
  spdlog::critical("tensor parallel: the group is broken, no step can run any more: {}", broken_);
  if (on_lost_) on_lost_(broken_);
}

void RemoteRanks::send(const StepMessage& message, std::chrono::milliseconds timeout) {
  std::vector<char> bytes = encode_step(message);
  group_.broadcast_bytes(bytes, 0, timeout);
  last_sent_ = std::chrono::steady_clock::now();
}

void RemoteRanks::watch(std::chrono::milliseconds idle_check) {
  std::unique_lock lock(mu_);
  while (!stopping_ && broken_.empty()) {
    cv_.wait_for(lock, idle_check, [&] { return stopping_; });
    if (stopping_ || std::chrono::steady_clock::now() - last_sent_ < idle_check) continue;
    try {
      send(StepMessage::ping(), std::chrono::seconds(30));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kIo) lost(fmt::format("a follower process was lost: {}", e.what()));
      else spdlog::error("tensor parallel: idle check: {}", e.what());
    }
  }
}

void RemoteRanks::lockstep(StepMessage message, const std::function<void()>& leader_part) {
  std::lock_guard lock(mu_);
  if (!broken_.empty()) fail(ErrorKind::kIo, "{}", broken_);
  message.state_ops = std::move(pending_);
  message.drafter_ops = std::move(pending_drafter_);
  pending_.clear();
  pending_drafter_.clear();
  try {
    send(message, std::chrono::minutes(5));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kIo) lost(fmt::format("a follower process was lost: {}", e.what()));
    throw;
  }
  // The followers now run this work and wait in its collectives for rank 0: whatever stops rank 0's part part way
  // leaves them out of step for good (nothing can bring a follower out of a collective but a closed connection).
  try {
    leader_part();
  } catch (const std::exception& e) {
    lost(fmt::format("rank 0 failed in the middle of a step, so the followers are out of step: {}", e.what()));
    throw;
  }
}

void RemoteRanks::queue(const DrafterOp& op) {
  std::lock_guard lock(mu_);
  pending_drafter_.push_back(op);
}

void RemoteRanks::forward(Model& leader, const ForwardBatch& batch, KvCache& kv, LinearStateCache& state,
                          const LogitsOut& logits, const FeatureCapture& capture) {
  lockstep(StepMessage::forward(batch, {}, LogitsForm::of(logits), logits.edits), [&] {
    failpoint("tp.leader_forward");
    leader.forward(batch, kv, state, logits, capture);
  });
}

std::unique_ptr<Drafter> RemoteRanks::sharded_drafter(const DrafterFactory& factory, WeightStore& leader_weights,
                                                      const DrafterLimits& limits) {
  if (!factory.recipe || !factory.shard) return nullptr;
  std::unique_ptr<Drafter> share;
  lockstep(StepMessage::draft_build(*factory.recipe, limits), [&] {
    share = factory.shard(leader_weights, limits, {.rank = 0, .size = size(), .comm = &group_.communicator()});
  });
  return std::make_unique<RemoteDrafter>(*this, std::move(share));
}

}  // namespace ninfer
