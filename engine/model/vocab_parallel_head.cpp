#include "engine/model/vocab_parallel_head.h"

#include <vector>

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

bool vocab_parallel_argmax_sharded(const Communicator& comm, int64_t vocab) {
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

void vocab_parallel_argmax(Backend& backend, Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                           const Tensor& head, int64_t vocab, const Tensor& allowed, std::span<int32_t> ids,
                           std::span<float> scores) {
  const int64_t R = x.dim(0);
  if (static_cast<int64_t>(ids.size()) != R)
    fail(ErrorKind::kInvalidArgument, "vocab_parallel_argmax: {} ids for {} rows", ids.size(), R);
  if (!scores.empty() && static_cast<int64_t>(scores.size()) != R * vocab)
    fail(ErrorKind::kInvalidArgument, "vocab_parallel_argmax: {} scores for {} rows × {}", scores.size(), R, vocab);
  if (R == 0) return;
  if (!scores.empty() || !vocab_parallel_argmax_sharded(comm, vocab)) {
    const Tensor logits = scratch.get("logits", {R, vocab});
    vocab_parallel_head(backend, comm, scratch, x, head, logits);
    if (allowed.data != nullptr) backend.mask_columns(logits, allowed);
    backend.argmax_rows(ids, logits);
    if (scores.empty()) return;
    backend.copy(Tensor::make(scores.data(), DType::kF32, {R, vocab}, Device::kCpu), logits);
    return backend.synchronize();
  }
  const WeightShard::Range share = tp_rows(vocab, comm.rank(), comm.size());
  if (head.dim(0) != share.end - share.begin)
    fail(ErrorKind::kInternal, "vocab_parallel_argmax: rank {} holds {} head rows, its share of {} is [{}, {})",
         comm.rank(), head.dim(0), vocab, share.begin, share.end);
  Tensor part = scratch.get("logits_part", {R, head.dim(0)});
  backend.linear(part, x, head);
  if (allowed.data != nullptr)
    backend.mask_columns(part, Tensor::make(static_cast<int8_t*>(allowed.data) + share.begin, DType::kI8,
                                            {head.dim(0)}, allowed.device));
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
