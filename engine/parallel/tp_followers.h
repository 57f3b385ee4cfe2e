// Owns what the engine asks of the ranks past rank 0 of a tensor-parallel group, wherever they run: threads of this
// process (TpRanks) or other processes (RemoteRanks). Rank 0's model, KV cache and GDN state are the engine's own.
#pragma once

#include <span>

#include "engine/model/forward_batch.h"
#include "engine/parallel/communicator.h"
#include "engine/speculative/drafter.h"

namespace ninfer {

class KvCache;
class LinearStateCache;
class Model;

class TpFollowers {
 public:
  virtual ~TpFollowers() = default;
  virtual int size() const = 0;  // ranks in all, rank 0 included
  // Rank 0's handle on the group, for its Model.
  virtual Communicator& leader_communicator() = 0;
  // Runs leader.forward(batch, kv, state, logits, capture) on rank 0 while every other rank runs the same batch on
  // its own model, KV cache and state, meeting rank 0 in the forward's collectives; returns when rank 0's is done.
  virtual void forward(Model& leader, const ForwardBatch& batch, KvCache& kv, LinearStateCache& state,
                       const LogitsOut& logits, const FeatureCapture& capture) = 0;
  // Makes every GDN state operation of rank 0's `leader` (zeroing an acquired slot, copy_slot) also happen on every
  // other rank's state, before that rank's next forward. Call once, with rank 0's state built with the group's rows.
  virtual void mirror_state(LinearStateCache& leader) = 0;
  // A drafter split over the ranks: `factory.shard` builds each rank's share on that rank's backend (rank 0's through
  // `leader_weights`; a process's through its own copy of the artifact, from `factory.recipe`), and every call of the
  // returned drafter runs on every rank in lockstep. nullptr where the ranks cannot build their shares (no shard
  // builder; other processes and no recipe): the drafter then runs whole on rank 0.
  virtual std::unique_ptr<Drafter> sharded_drafter(const DrafterFactory& factory, WeightStore& leader_weights,
                                                   const DrafterLimits& limits) = 0;
};

}  // namespace ninfer
