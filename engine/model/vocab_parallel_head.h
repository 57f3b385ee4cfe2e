// Owns the scoring head written once against the Backend ops and a Communicator, for the target's lm_head and the
// drafters' heads: under tensor parallelism each rank holds a range of the head's rows (tp_rows), and either the
// scores are gathered or, for a greedy choice, only each rank's best (score, id) pair.
#pragma once

#include <cstdint>
#include <span>

#include "engine/backend/backend.h"
#include "engine/backend/scratch_buffers.h"
#include "engine/parallel/communicator.h"

namespace ninfer {

// out [R, V] = x [R, H] · headᵀ. One rank: `head` is [V, H]. Under TP `head` is this rank's rows [V_r, H]: its columns
// of the scores go to scratch "logits_part" [R, V_r] and are gathered into `out` on every rank (rank order).
void vocab_parallel_head(Backend& backend, Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                         const Tensor& head, const Tensor& out);

// Whether vocab_parallel_argmax reduces on the ranks (each rank's share small enough for Backend::max_rows, at least
// one column per rank) for a head of `vocab` rows; else it gathers the scores first. Every rank answers alike.
bool vocab_parallel_argmax_sharded(const Communicator& comm, int64_t vocab);

// ids [R] (host, every rank) = each row's first maximum over the `vocab` columns of x [R, H] · headᵀ after
// `allowed` (i8 [vocab] on the backend, or an empty tensor for none; Backend::mask_columns) set the disallowed ones
// to −inf: the answer of vocab_parallel_head + mask_columns + argmax_rows, NaN included. One rank: exactly that
// (scratch "logits" [R, vocab]). Under TP each rank scores its rows tp_rows(vocab) into "logits_part", reduces them
// to a (maximum, index) pair per row (Backend::max_rows) and only the pairs are gathered ("argmax_pairs"): 8 bytes
// per row and rank instead of the row. With `scores` (host [R, vocab]) the rows are gathered as on one rank and
// copied there too (after the mask). Leaves the stream synchronized.
void vocab_parallel_argmax(Backend& backend, Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                           const Tensor& head, int64_t vocab, const Tensor& allowed, std::span<int32_t> ids,
                           std::span<float> scores = {});

// The rank-order reduction of vocab_parallel_argmax: pairs [R, 2·size] (rank r's (maximum, index) at columns 2r,
// 2r + 1, from max_rows with nan_first on rank 0 only), rank r's columns starting at tp_rows(vocab, r, size).begin.
// The first maximum of the whole row: std::max_element's answer over the ranks' columns side by side. Public for
// its test.
void reduce_argmax_pairs(std::span<const float> pairs, int size, int64_t vocab, std::span<int32_t> ids);

}  // namespace ninfer
