#include "engine/model/vocab_parallel_head.h"

#include <vector>

#include "engine/backend/top_pairs.h"
#include "engine/core/error.h"
#include "engine/model/weight_shard.h"

namespace ninfer {

void vocab_parallel_head(Backend& backend, Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                         const Tensor& head, const Tensor& out) {
  if (comm.size() == 1) return backend.linear(out, x, head);
  Tensor part = scratch.get("logits_part", {x.dim(0), head.dim(0)});
  backend.linear(part, x, head);
  comm.all_gather(out, part, backend);
}

namespace {

// The edits of columns [begin, end), renumbered from begin (still ordered: a filter of an ordered list).
std::vector<LogitEdit> edits_of_share(std::span<const LogitEdit> edits, int64_t begin, int64_t end) {
  std::vector<LogitEdit> mine;
  for (LogitEdit e : edits)
    if (e.col >= begin && e.col < end) {
      e.col -= static_cast<int32_t>(begin);
      mine.push_back(e);
    }
  return mine;
}

// This rank's columns of the scores, x · its head rows, masked and edited: scratch "logits_part" [R, its share of
// vocab].
Tensor score_share(Backend& backend, const Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                   const Tensor& head, int64_t vocab, const Tensor& allowed, std::span<const LogitEdit> edits,
                   const char* who) {
  const WeightShard::Range share = tp_rows(vocab, comm.rank(), comm.size());
  if (head.dim(0) != share.end - share.begin)
    fail(ErrorKind::kInternal, "{}: rank {} holds {} head rows, its share of {} is [{}, {})", who, comm.rank(),
         head.dim(0), vocab, share.begin, share.end);
  Tensor part = scratch.get("logits_part", {x.dim(0), head.dim(0)});
  backend.linear(part, x, head);
  const Tensor mine = allowed.data != nullptr ? Tensor::make(static_cast<int8_t*>(allowed.data) + share.begin,
                                                              DType::kI8, {head.dim(0)}, allowed.device)
                                               : Tensor{};
  mask_and_edit(backend, part, mine, edits_of_share(edits, share.begin, share.end));
  return part;
}

}  // namespace

void mask_and_edit(Backend& backend, const Tensor& logits, const Tensor& allowed, std::span<const LogitEdit> edits) {
  if (allowed.data != nullptr) backend.mask_columns(logits, allowed);
  if (!edits.empty()) backend.edit_logits(logits, edits);
}

bool vocab_parallel_choice_sharded(const Communicator& comm, int64_t vocab) {
  if (comm.size() == 1 || vocab < comm.size()) return false;
  for (int r = 0; r < comm.size(); ++r) {
    const WeightShard::Range share = tp_rows(vocab, r, comm.size());
    if (share.end - share.begin > kMaxRowsColumns) return false;
  }
  return true;
}

void reduce_argmax_pairs(std::span<const float> pairs, int size, int64_t vocab, std::span<int32_t> ids) {
  const size_t R = ids.size();
  if (pairs.size() != R * 2 * static_cast<size_t>(size))
    fail(ErrorKind::kInternal, "argmax pairs: {} floats for {} rows of {} ranks", pairs.size(), R, size);
  for (size_t r = 0; r < R; ++r) {
    const float* row = pairs.data() + r * 2 * static_cast<size_t>(size);
    // Rank 0's pair is std::max_element's over its columns: NaN only when its first column (the row's) is NaN, and
    // then, as max_element never leaves index 0, no later pair compares larger. A later rank's pair is its first
    // maximum with NaN skipped ((NaN, -1) for none, which never compares larger either).
    float best = row[0];
    int64_t at = static_cast<int64_t>(row[1]);
    for (int q = 1; q < size; ++q) {
      const float v = row[2 * q];
      if (v > best) best = v, at = tp_rows(vocab, q, size).begin + static_cast<int64_t>(row[2 * q + 1]);  // ties: lower id
    }
    ids[r] = static_cast<int32_t>(at);
  }
}

void merge_top_pairs(std::span<const float> pairs, int size, int64_t vocab, int32_t k, std::span<float> top) {
  if (k < 1) fail(ErrorKind::kInternal, "top pairs: k = {}", k);
  const size_t K = static_cast<size_t>(k), R = top.size() / (2 * K);
  if (top.size() != R * 2 * K || pairs.size() != R * static_cast<size_t>(size) * 2 * K)
    fail(ErrorKind::kInternal, "top pairs: {} floats of {} ranks into {} floats, k = {}", pairs.size(), size,
         top.size(), k);
  TopPairs first(K);
  for (size_t r = 0; r < R; ++r) {
    first.clear();
    for (int q = 0; q < size; ++q) {
      const float* mine = pairs.data() + (r * static_cast<size_t>(size) + static_cast<size_t>(q)) * 2 * K;
      const int64_t begin = tp_rows(vocab, q, size).begin;
      for (size_t j = 0; j < K && mine[2 * j + 1] >= 0.0f; ++j)
        first.push(mine[2 * j], begin + static_cast<int64_t>(mine[2 * j + 1]));
    }
    first.write(top.data() + r * 2 * K);
  }
}

void top_of_rows(Backend& backend, ScratchBuffers& scratch, const Tensor& logits, int32_t k, std::span<float> top) {
  const int64_t R = logits.dim(0);
  const Tensor best = scratch.get("top_pair", {R, k, 2});
  backend.top_k_rows(best, logits);
  backend.copy(Tensor::make(top.data(), DType::kF32, {R, k, 2}, Device::kCpu), best);
  backend.synchronize();
}

void vocab_parallel_top(Backend& backend, Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                        const Tensor& head, int64_t vocab, const Tensor& allowed, int32_t k, std::span<float> top,
                        std::span<const LogitEdit> edits) {
  const int64_t R = x.dim(0);
  if (k < 1 || static_cast<int64_t>(top.size()) != R * k * 2)
    fail(ErrorKind::kInvalidArgument, "vocab_parallel_top: {} floats for {} rows of {} pairs", top.size(), R, k);
  if (R == 0) return;
  if (!vocab_parallel_choice_sharded(comm, vocab)) {
    const Tensor logits = scratch.get("logits", {R, vocab});
    vocab_parallel_head(backend, comm, scratch, x, head, logits);
    mask_and_edit(backend, logits, allowed, edits);
    return top_of_rows(backend, scratch, logits, k, top);
  }
  const Tensor part = score_share(backend, comm, scratch, x, head, vocab, allowed, edits, "vocab_parallel_top");
  const Tensor mine = scratch.get("top_pair", {R, k, 2});
  backend.top_k_rows(mine, part);
  const int64_t width = 2 * k * static_cast<int64_t>(comm.size());
  const Tensor all = scratch.get("top_pairs", {R, width});
  comm.all_gather(all, mine.reshape({R, 2 * k}), backend);
  std::vector<float> pairs(static_cast<size_t>(R * width));
  backend.copy(Tensor::make(pairs.data(), DType::kF32, {R, width}, Device::kCpu), all);
  backend.synchronize();
  merge_top_pairs(pairs, comm.size(), vocab, k, top);
}

void vocab_parallel_argmax(Backend& backend, Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                           const Tensor& head, int64_t vocab, const Tensor& allowed, std::span<int32_t> ids,
                           std::span<float> scores, std::span<const LogitEdit> edits) {
  const int64_t R = x.dim(0);
  if (static_cast<int64_t>(ids.size()) != R)
    fail(ErrorKind::kInvalidArgument, "vocab_parallel_argmax: {} ids for {} rows", ids.size(), R);
  if (!scores.empty() && static_cast<int64_t>(scores.size()) != R * vocab)
    fail(ErrorKind::kInvalidArgument, "vocab_parallel_argmax: {} scores for {} rows × {}", scores.size(), R, vocab);
  if (R == 0) return;
  if (!scores.empty() || !vocab_parallel_choice_sharded(comm, vocab)) {
    const Tensor logits = scratch.get("logits", {R, vocab});
    vocab_parallel_head(backend, comm, scratch, x, head, logits);
    mask_and_edit(backend, logits, allowed, edits);
    backend.argmax_rows(ids, logits);
    if (scores.empty()) return;
    backend.copy(Tensor::make(scores.data(), DType::kF32, {R, vocab}, Device::kCpu), logits);
    return backend.synchronize();
  }
  const Tensor part = score_share(backend, comm, scratch, x, head, vocab, allowed, edits, "vocab_parallel_argmax");
  Tensor mine = scratch.get("argmax_pair", {R, 2});
  backend.max_rows(mine, part, /*nan_first=*/comm.rank() == 0);
  Tensor all = scratch.get("argmax_pairs", {R, 2 * static_cast<int64_t>(comm.size())});
  comm.all_gather(all, mine, backend);
  std::vector<float> pairs(static_cast<size_t>(R * 2 * comm.size()));
  backend.copy(Tensor::make(pairs.data(), DType::kF32, {R, 2 * static_cast<int64_t>(comm.size())}, Device::kCpu), all);
  backend.synchronize();
  reduce_argmax_pairs(pairs, comm.size(), vocab, ids);
}

}  // namespace ninfer
