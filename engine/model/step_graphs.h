// Owns the op-graph path of the model forward (docs/cuda-graphs.md): which steps qualify (every sequence brings the
// same few rows: decode and speculative verification), one recorded graph per step shape, the graph-owned copy of the
// step's index spans that a replay reads again, and dropping the graphs when memory they point at was replaced.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/forward_batch.h"

namespace ninfer {

struct StepGraphStats {
  int64_t captures = 0;       // graphs recorded
  int64_t replays = 0;        // steps run through a graph
  int64_t invalidations = 0;  // times every graph was dropped because memory they point at moved
  int64_t failures = 0;       // shapes whose recording failed (they run eagerly from then on; logged)
};

class StepGraphs {
 public:
  // The forward's part a graph records: every op after the embedding, up to the logits (and features) in device
  // scratch. It reads the batch's index spans, never its token ids.
  using Body = std::function<void(const ForwardBatch&)>;

  // The forward of one rank alone (TP1): its collectives do nothing.
  explicit StepGraphs(Backend& backend) : backend_(backend) {}

  // Steps with at most this many rows per sequence / in all qualify (decode: 1 per sequence; verification: K + 1).
  static constexpr int64_t kMaxRowsPerSequence = 16;
  static constexpr int64_t kMaxRows = 256;
  // Graphs kept at once: past this the least recently replayed one is dropped (recorded again when its shape returns).
  static constexpr size_t kMaxGraphs = 48;

  // The graph to replay for `batch`, its inputs loaded with the batch's spans; recorded now (by running `body` under
  // capture) when the shape ran eagerly before. nullptr: run `body` eagerly (a first sight of the shape, a shape that
  // does not qualify, or one whose recording failed). `scratch_epoch`: the caller's ScratchBuffers::epoch().
  OpGraph* prepare(const ForwardBatch& batch, const FeatureSpec* features, uint64_t scratch_epoch, const Body& body);

  const StepGraphStats& stats() const { return stats_; }

 private:
  // A graph's own copy of a step's spans, at fixed addresses: the block table padded to a power-of-two width.
  struct Inputs {
    std::vector<int32_t> tokens, positions, q_start, seq_len, state_slot, block_table, kv_slots, logit_rows,
        checkpoint_slot;
    int32_t width = 0;
    void load(const ForwardBatch& b);
    ForwardBatch batch() const;
    std::vector<std::span<const int32_t>> spans() const;
  };
  struct Entry {
    std::unique_ptr<OpGraph> graph;
    std::unique_ptr<Inputs> inputs;
    bool failed = false;
    uint64_t last_use = 0;
  };
  // The shape of a step: sequences, rows per sequence, logit rows, table width, which rows checkpoint, and the
  // features captured. Empty: the step does not qualify.
  std::vector<int64_t> key_of(const ForwardBatch& batch, const FeatureSpec* features) const;

  void drop_least_recent();

  Backend& backend_;
  uint64_t clock_ = 0;  // steps that asked for a graph
  std::map<std::vector<int64_t>, Entry> entries_;  // present: the shape ran (eagerly) at least once
  uint64_t memory_epoch_ = 0, scratch_epoch_ = 0;  // when the current graphs were recorded
  StepGraphStats stats_;
};

}  // namespace ninfer
