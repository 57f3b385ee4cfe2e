// Owns the ranks of an in-process tensor-parallel group past rank 0 (each one's backend, weight shard, model, KV
// and GDN state tensors, and the thread its forward runs on) and running one step on every rank in lockstep.
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
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/linear_state.h"

namespace ninfer {

struct TpSetup {
  int tp = 2;                  // ranks in all, rank 0 included
  BackendSelection backend;    // every follower's backend (CPU: `threads` is already the rank's share)
  KvCacheConfig kv;            // the same blocks on every rank (block tables are rank 0's, shared by all)
  int64_t state_slots = 0;     // LinearStateCache rows, as rank 0's
  int64_t state_checkpoints = 0;
  int64_t state_extra_rows = 0;
};

// A CPU backend's threads for one of `tp` ranks: `threads` (0 = all cores) shared out, at least 1.
int tp_rank_threads(int threads, int tp);

class TpRanks {
 public:
  // Builds ranks 1..tp−1 from the model's full weights (views into the artifact, which must outlive this) and logs
  // every rank's layout. Rank 0 (the leader) is built by the caller: tp_layout(config, 0, tp), shard_weights,
  // tp_rank_config, and communicator(0) for its Model.
  TpRanks(const ModelWeights& full, const ModelConfig& config, const TpSetup& setup);
  ~TpRanks();  // stops and joins the follower threads
  TpRanks(const TpRanks&) = delete;
  TpRanks& operator=(const TpRanks&) = delete;

  int size() const { return group_.size(); }
  Communicator& communicator(int rank) { return group_.rank(rank); }

  // Runs leader.forward(batch, kv, state, logits, capture) on the calling thread while every follower runs the same
  // batch (host spans, read by all) on its own KV / state tensors; returns when all are done. A failure on any rank
  // aborts the group's collectives (no rank waits forever), and the first failure is rethrown once every rank has
  // stopped; the group is then re-armed for the next step.
  void forward(Model& leader, const ForwardBatch& batch, KvCache& kv, LinearStateCache& state, std::span<float> logits,
               const FeatureCapture& capture);
  // Zeroes GDN state row `slot` on every follower (rank 0's LinearStateCache::acquire zeroes its own).
  void zero_state_slot(int32_t slot);

  Model& model(int rank) { return *followers_.at(static_cast<size_t>(rank - 1))->model; }
  KvCache& kv(int rank) { return *followers_.at(static_cast<size_t>(rank - 1))->kv; }
  LinearStateCache& state(int rank) { return *followers_.at(static_cast<size_t>(rank - 1))->state; }

 private:
  struct Follower {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvCache> kv;
    std::unique_ptr<LinearStateCache> state;
    std::vector<float> logits;
    std::thread thread;
  };
  void follow(int rank);  // a follower thread: runs each job as it comes
  void failed(std::exception_ptr e);

  InProcessGroup group_;
  std::vector<std::unique_ptr<Follower>> followers_;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t job_ = 0;     // generation of the current job
  int done_ = 0;         // followers done with it
  bool stopping_ = false;
  const ForwardBatch* batch_ = nullptr;
  std::exception_ptr first_error_;
};

}  // namespace ninfer
