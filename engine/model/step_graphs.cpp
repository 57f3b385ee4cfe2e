#include "engine/model/step_graphs.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <exception>

#include "engine/core/error.h"

namespace ninfer {

namespace {
constexpr int32_t kMinTableWidth = 16;  // block-table columns of the narrowest graph
}  // namespace

std::vector<int64_t> StepGraphs::key_of(const ForwardBatch& b, const FeatureSpec* features) const {
  const auto S = static_cast<int64_t>(b.q_start.size()) - 1;
  const auto T = static_cast<int64_t>(b.tokens.size());
  if (S < 1 || T > kMaxRows) return {};
  const int64_t rows = b.q_start[1] - b.q_start[0];
  if (rows < 1 || rows > kMaxRowsPerSequence) return {};
  for (int64_t s = 1; s < S; ++s)
    if (b.q_start[static_cast<size_t>(s + 1)] - b.q_start[static_cast<size_t>(s)] != rows) return {};
  const int32_t width = std::max(kMinTableWidth, static_cast<int32_t>(std::bit_ceil(static_cast<uint32_t>(b.max_blocks))));
  std::vector<int64_t> key = {S, rows, static_cast<int64_t>(b.logit_rows.size()), width};
  // Which rows checkpoint decides which sequences the GDN op runs token by token: part of the shape.
  key.push_back(b.checkpoint_slot.empty() ? -1 : 0);
  for (int32_t c : b.checkpoint_slot) key.push_back(c >= 0 ? 1 : 0);
  if (features != nullptr && !features->empty()) {
    key.push_back(static_cast<int64_t>(features->layers.size()));
    key.insert(key.end(), features->layers.begin(), features->layers.end());
    key.push_back(features->final_hidden ? 1 : 0);
  }
  return key;
}

OpGraph* StepGraphs::prepare(const ForwardBatch& batch, const FeatureSpec* features, uint64_t scratch_epoch,
                             const Body& body) {
  std::vector<int64_t> key = key_of(batch, features);
  if (key.empty()) return nullptr;
  if (backend_.memory_epoch() != memory_epoch_ || scratch_epoch != scratch_epoch_) {
    bool dropped = false;
    for (auto& [k, e] : entries_) {
      dropped = dropped || e.graph != nullptr;
      e.graph.reset();
    }
    if (dropped) {
      ++stats_.invalidations;
      spdlog::debug("step graphs: activation or workspace memory was replaced; every graph is recorded again");
    }
    memory_epoch_ = backend_.memory_epoch();
    scratch_epoch_ = scratch_epoch;
  }
  const int32_t width = static_cast<int32_t>(key[3]);
  auto [it, first] = entries_.try_emplace(std::move(key));
  Entry& e = it->second;
  e.last_use = ++clock_;
  if (first || e.failed) return nullptr;  // the first step of a shape runs eagerly: it allocates what the shape needs
  if (!e.graph) {
    drop_least_recent();
    e.inputs = std::make_unique<Inputs>();
    e.inputs->width = width;
    e.inputs->load(batch);
    try {
      backend_.begin_graph_capture(e.inputs->spans());
      body(e.inputs->batch());
      e.graph = backend_.end_graph_capture();
    } catch (const std::exception& ex) {
      backend_.abort_graph_capture();
      e.failed = true;
      ++stats_.failures;
      spdlog::warn("step graphs: recording a step of {} sequence(s) × {} row(s) failed; steps of that shape run without "
                   "a graph: {}", batch.q_start.size() - 1, batch.q_start[1] - batch.q_start[0], ex.what());
      return nullptr;
    }
    if (backend_.memory_epoch() != memory_epoch_)
      fail(ErrorKind::kInternal, "step graphs: recording a step replaced workspace memory");
    ++stats_.captures;
  } else {
    e.inputs->load(batch);
  }
  ++stats_.replays;
  return e.graph.get();
}

void StepGraphs::drop_least_recent() {
  size_t live = 0;
  Entry* oldest = nullptr;
  for (auto& [k, e] : entries_) {
    if (!e.graph) continue;
    ++live;
    if (oldest == nullptr || e.last_use < oldest->last_use) oldest = &e;
  }
  if (live >= kMaxGraphs && oldest != nullptr) oldest->graph.reset();
}

void StepGraphs::Inputs::load(const ForwardBatch& b) {
  tokens.assign(b.tokens.begin(), b.tokens.end());
  positions.assign(b.positions.begin(), b.positions.end());
  q_start.assign(b.q_start.begin(), b.q_start.end());
  seq_len.assign(b.seq_len.begin(), b.seq_len.end());
  state_slot.assign(b.state_slot.begin(), b.state_slot.end());
  kv_slots.assign(b.kv_slots.begin(), b.kv_slots.end());
  logit_rows.assign(b.logit_rows.begin(), b.logit_rows.end());
  checkpoint_slot.assign(b.checkpoint_slot.begin(), b.checkpoint_slot.end());
  const size_t S = seq_len.size(), from = static_cast<size_t>(b.max_blocks), to = static_cast<size_t>(width);
  if (from > to) fail(ErrorKind::kInternal, "step graphs: a block table of {} columns in a graph of {}", from, to);
  block_table.assign(S * to, 0);
  for (size_t s = 0; s < S; ++s)
    std::copy_n(b.block_table.begin() + static_cast<std::ptrdiff_t>(s * from), from,
                block_table.begin() + static_cast<std::ptrdiff_t>(s * to));
}

ForwardBatch StepGraphs::Inputs::batch() const {
  return ForwardBatch{tokens, positions, q_start, seq_len, state_slot, block_table, width, kv_slots, logit_rows,
                      checkpoint_slot};
}

std::vector<std::span<const int32_t>> StepGraphs::Inputs::spans() const {
  return {positions, q_start, seq_len, state_slot, block_table, kv_slots, logit_rows, checkpoint_slot};
}

}  // namespace ninfer
