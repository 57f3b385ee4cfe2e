// Owns the interface every speculative drafter implements (MTP, DFlash2, test drafters) and what the engine
// hands it: the target's per-row features of committed tokens in, greedy draft tokens out (docs/speculative.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/weight_store.h"
#include "engine/model/forward_batch.h"
#include "engine/runtime/kv_cache.h"

namespace ninfer {

class Communicator;
struct DrafterRecipe;  // engine/speculative/drafter_registry.h

// Rows the target has computed for committed tokens of one sequence: positions [start, start + n). Row i
// carries the target features at position start + i and next_tokens[i], the committed token at start + i + 1
// (the token the row was followed by; its last entry is the sequence's newest token, whose own row the
// target has not computed yet). features is host f32 [n, FeatureSpec::width(H)], row-major.
struct DraftRows {
  SeqId seq = 0;
  int64_t start = 0;
  std::span<const int32_t> next_tokens;
  std::span<const float> features;
};

// Contract (the engine keeps it; every drafter relies on it):
//  - observe() for a sequence starts at position 0 (after add_sequence) and continues where the previous
//    committed rows ended, or earlier: a start below what the drafter holds discards everything it holds at
//    positions ≥ start first (this is the rollback of rejected drafts: the drafter's own KV / state caches
//    keep nothing past the committed tokens).
//  - propose() is called only after observe() for every listed sequence; it drafts k tokens that follow the
//    newest token (the last next_tokens entry) greedily, and may write scratch state at positions it will
//    discard on the next observe().
//  - Drafts are deterministic proposals (q is one-hot on the draft token); the rejection sampler uses that.
class Drafter {
 public:
  virtual ~Drafter() = default;

  virtual const FeatureSpec& features() const = 0;
  // The largest k propose() accepts (DFlash2: block size − 1).
  virtual int32_t max_draft_tokens() const = 0;

  virtual void add_sequence(SeqId seq) = 0;
  virtual void release(SeqId seq) = 0;

  virtual void observe(std::span<const DraftRows> rows) = 0;
  // drafts [seqs.size() · k], row-major per sequence, full-vocabulary token ids.
  virtual void propose(std::span<const SeqId> seqs, int32_t k, std::span<int32_t> drafts) = 0;
  // Bytes of the drafter's own caches (KV, per-sequence state), allocated at construction; the memory plan predicts
  // the same figure with drafter_cache_bytes() (engine/speculative/drafter_registry.h) before anything is built.
  virtual uint64_t cache_bytes() const = 0;
};

// Builds the drafter once the engine has its backend (the drafter runs its ops on it). max_sequences and
// max_context bound the drafter's own caches; the engine passes max_context = its context limit + draft_tokens,
// since one propose() uses the largest k of the listed sequences (docs/speculative.md).
struct DrafterLimits {
  int32_t max_sequences = 1;
  int64_t max_context = 0;
  int32_t draft_tokens = 1;
};
// One rank's place in a tensor-parallel group, for a drafter split over it: rank `rank` of `size`, meeting the other
// ranks' shares of the drafter in `comm`'s collectives.
struct DrafterRank {
  int rank = 0;
  int size = 1;
  Communicator* comm = nullptr;
};

// Builds the drafter on the engine's backend; its weights go through the engine's WeightStore (shared with the target's
// where they are the same tensors, e.g. the embedding and lm_head). `shard`, where the drafter has one, builds one
// rank's share of it instead (its heads, MLP rows and head rows, as the target's layers are cut; docs/parallel.md):
// under tensor parallelism the engine builds every rank's share on that rank's backend and drives them in lockstep.
struct DrafterFactory {
  using Whole = std::function<std::unique_ptr<Drafter>(WeightStore& weights, const DrafterLimits& limits)>;
  using Shard =
      std::function<std::unique_ptr<Drafter>(WeightStore& weights, const DrafterLimits& limits, const DrafterRank& rank)>;

  DrafterFactory() = default;
  DrafterFactory(std::nullptr_t) {}  // NOLINT: no drafter, as for a std::function
  template <typename F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, DrafterFactory> &&
             std::is_invocable_r_v<std::unique_ptr<Drafter>, F&, WeightStore&, const DrafterLimits&>)
  DrafterFactory(F make) : whole(std::move(make)) {}  // NOLINT: any callable that builds the whole drafter

  explicit operator bool() const { return static_cast<bool>(whole); }
  std::unique_ptr<Drafter> operator()(WeightStore& weights, const DrafterLimits& limits) const {
    return whole(weights, limits);
  }

  Whole whole;
  Shard shard;  // empty: the drafter is not split (under TP it runs whole on rank 0)
  // How another process builds the same factory from its own copy of the artifact (make_drafter_factory's arguments),
  // so that ranks in other processes can build their shares; null for drafters that only this process can build.
  std::shared_ptr<const DrafterRecipe> recipe;
};

}  // namespace ninfer
