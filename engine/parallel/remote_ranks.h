// Owns rank 0's side of a multi-process tensor-parallel group (GlooGroup, one rank per process): telling the follower
// processes the group's setup and waiting until each has built its rank, then sending every forward step (and every
// call of a split drafter) with the GDN state and drafter operations rank 0's bookkeeping did since the last one, and
// stop when the engine ends.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <span>
#include <string>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/model/model.h"
#include "engine/parallel/gloo_group.h"
#include "engine/parallel/step_message.h"
#include "engine/parallel/tp_followers.h"
#include "engine/parallel/tp_ranks.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"

namespace ninfer {

// What rank 0 sends its followers: the group's rows and KV blocks from `setup` (its backend aside: each process has
// its own), and the model it loaded (`artifact`, `config`), which each follower compares with its own.
GroupSetup group_setup(const TpSetup& setup, const Artifact& artifact, const ModelConfig& config);

class RemoteRanks final : public TpFollowers, private StateMirror {
 public:
  // Sends `setup` and waits up to `ready_timeout` for every follower to load and place its shard. A follower that
  // fails (another model, a bad flag) ends its process with its reason in its own log; rank 0 then fails with
  // Error(kIo) naming the lost rank.
  // `on_lost` (optional) is called once, when a step or the idle check finds a peer lost. While no step is sent for
  // `idle_check`, rank 0 pings its followers, so a follower that dies while the server is idle is noticed within about
  // two of those periods.
  RemoteRanks(GlooGroup& group, const GroupSetup& setup, std::chrono::milliseconds ready_timeout,
              std::function<void(const std::string& why)> on_lost = nullptr,
              std::chrono::milliseconds idle_check = std::chrono::seconds(1));
  ~RemoteRanks() override;  // tells the followers to stop (they exit 0); a broken group is left as it is
  RemoteRanks(const RemoteRanks&) = delete;
  RemoteRanks& operator=(const RemoteRanks&) = delete;

  int size() const override { return group_.size(); }
  Communicator& leader_communicator() override { return group_.communicator(); }

  // Sends the step (with the pending state operations), then runs rank 0's forward; the followers run theirs in
  // lockstep, meeting rank 0 in the forward's collectives. A lost peer throws Error(kIo), and the group is broken from
  // then on: every later call fails at once with the first loss's message.
  void forward(Model& leader, const ForwardBatch& batch, KvCache& kv, LinearStateCache& state, const LogitsOut& logits,
               const FeatureCapture& capture) override;
  // Rank 0's state operations are recorded and sent to the followers with the next step.
  void mirror_state(LinearStateCache& leader) override { leader.mirror_to(static_cast<StateMirror&>(*this)); }
  // Every follower builds its share from the factory's recipe and its own copy of the artifact (a kDraftBuild message),
  // rank 0 builds its own; the RemoteDrafter returned sends each later call to the followers. nullptr for a factory
  // without a recipe or a shard builder (the drafter then runs whole on rank 0).
  std::unique_ptr<Drafter> sharded_drafter(const DrafterFactory& factory, WeightStore& leader_weights,
                                           const DrafterLimits& limits) override;

  // Sends `message` with the pending drafter and state operations, then runs `leader_part` (rank 0's share of the same
  // work) while the followers run theirs, meeting rank 0 in its collectives. Failures break the group as forward's do.
  void lockstep(StepMessage message, const std::function<void()>& leader_part);
  // A split drafter's add_sequence / release on rank 0, sent with the next message.
  void queue(const DrafterOp& op);

 private:
  void zero_row(int32_t row) override { pending_.push_back({StateOp::Kind::kZero, row, 0}); }
  void copy_slot(int32_t dst, int32_t src) override { pending_.push_back({StateOp::Kind::kCopy, dst, src}); }
  // Sends `message` to the followers (mu_ held); a lost peer breaks the group.
  void send(const StepMessage& message, std::chrono::milliseconds timeout);
  void lost(const std::string& why);  // mu_ held
  void watch(std::chrono::milliseconds idle_check);  // the idle check's thread

  GlooGroup& group_;
  std::vector<StateOp> pending_;
  std::vector<DrafterOp> pending_drafter_;
  std::function<void(const std::string&)> on_lost_;
  std::mutex mu_;  // one message at a time: the engine's steps and the idle check's pings
  std::condition_variable cv_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point last_sent_;
  std::string broken_;  // the loss that broke the group, or empty
  std::thread watcher_;
};

}  // namespace ninfer
