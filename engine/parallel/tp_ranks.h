// Owns the ranks of an in-process tensor-parallel group past rank 0 (each one's backend, weight shard, model, KV
// and GDN state tensors, and the thread its work runs on) and running one job (a forward step) on every rank in
// lockstep.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/model/model.h"
#include "engine/model/weight_shard.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/tp_followers.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"

namespace ninfer {

struct TpSetup {
  int tp = 2;                  // ranks in all, rank 0 included
  BackendSelection backend{};  // every follower's backend (CPU: `threads` is already the rank's share)
  // CUDA: rank r's device (tp entries; rank 0's is the engine's). Distinct devices: an NCCL group; a device listed
  // more than once: ranks that share it exchange through host memory (InProcessGroup; a one-GPU test setup).
  std::vector<int> devices{};
  KvCacheConfig kv{};          // the same blocks on every rank (block tables are rank 0's, shared by all)
  int64_t state_slots = 0;     // LinearStateCache rows, as rank 0's
  int64_t state_checkpoints = 0;
  int64_t state_extra_rows = 0;
};

// A CPU backend's threads for one of `tp` ranks: `threads` (0 = all cores) shared out, at least 1.
int tp_rank_threads(int threads, int tp);

struct RankReplica;

class TpRanks final : public TpFollowers {
 public:
  // Builds ranks 1..tp−1 from the model's full weights (views into the artifact, which must outlive this), each on its
  // own backend (CUDA: on setup.devices[r], its shard uploaded there), and logs every rank's layout. Rank 0 (the leader) is built by the caller: tp_layout(config, 0, tp), shard_weights,
  // tp_rank_config, and communicator(0) for its Model.
  TpRanks(const ModelWeights& full, const ModelConfig& config, const TpSetup& setup);
  ~TpRanks() override;  // stops and joins the follower threads
  TpRanks(const TpRanks&) = delete;
  TpRanks& operator=(const TpRanks&) = delete;

  int size() const override { return group_->size(); }
  Communicator& communicator(int rank) { return group_->rank(rank); }
  Communicator& leader_communicator() override { return group_->rank(0); }

  // Runs job(0) on the calling thread while every follower r runs job(r) on its own thread; returns when all are
  // done. The jobs may call the group's collectives (in the same order on every rank). A failure on any rank aborts
  // the group's collectives (no rank waits forever), and the first failure is rethrown once every rank has stopped;
  // the group is then re-armed for the next job.
  void run(const std::function<void(int rank)>& job);
  // run() of one forward: leader.forward(batch, kv, state, logits, capture) on rank 0, the same batch (host spans,
  // read by all) on every follower's own model, KV and state tensors.
  void forward(Model& leader, const ForwardBatch& batch, KvCache& kv, LinearStateCache& state, const LogitsOut& logits,
               const FeatureCapture& capture) override;
  // Makes every GDN state operation of rank 0's `leader` (zeroing an acquired slot, copy_slot: prefix-cache
  // snapshots) also apply to every follower's state (LinearStateCache::mirror_to; adopting a speculative checkpoint
  // changes only which rows rank 0 names). Call once, with rank 0's state built with the same rows as TpSetup's.
  void mirror_state(LinearStateCache& leader) override;
  // Every rank's share of the drafter, built on its own thread and backend; a RankDrafters over them.
  std::unique_ptr<Drafter> sharded_drafter(const DrafterFactory& factory, WeightStore& leader_weights,
                                           const DrafterLimits& limits) override;

  Model& model(int rank);
  KvCache& kv(int rank);
  LinearStateCache& state(int rank);

 private:
  struct Follower {
    std::unique_ptr<RankReplica> replica;
    std::thread thread;
  };
  void follow(int rank);  // a follower thread: runs each job as it comes
  void failed(std::exception_ptr e);

  std::unique_ptr<CommunicatorGroup> group_;
  std::vector<std::unique_ptr<Follower>> followers_;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t job_ = 0;     // generation of the current job
  int done_ = 0;         // followers done with it
  bool stopping_ = false;
  const std::function<void(int)>* work_ = nullptr;
  std::exception_ptr first_error_;
};

}  // namespace ninfer
