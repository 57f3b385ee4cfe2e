// Owns the scoring head written once against the Backend ops and a Communicator, for the target's lm_head and the
// drafters' heads: under tensor parallelism each rank holds a range of the head's rows (tp_rows), and either the
// scores are gathered or, for a greedy or top-k choice, only each rank's best (score, id) pairs.
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

// Logit rows before a choice: the ids a model may not produce to −inf (`allowed`, i8 on the backend, or an empty
// tensor for none; Backend::mask_columns), then the samplers' edits (Backend::edit_logits), in that order.
void mask_and_edit(Backend& backend, const Tensor& logits, const Tensor& allowed, std::span<const LogitEdit> edits);

// Whether vocab_parallel_argmax and vocab_parallel_top reduce on the ranks (each rank's share small enough for
// Backend::max_rows / top_k_rows, at least one column per rank) for a head of `vocab` rows; else they gather the
// scores first. Every rank answers alike.
bool vocab_parallel_choice_sharded(const Communicator& comm, int64_t vocab);

// ids [R] (host, every rank) = each row's first maximum over the `vocab` columns of x [R, H] · headᵀ after
// `allowed` (i8 [vocab] on the backend, or an empty tensor for none; Backend::mask_columns) set the disallowed ones
// to −inf: the answer of vocab_parallel_head + mask_columns + argmax_rows, NaN included. One rank: exactly that
// (scratch "logits" [R, vocab]). Under TP each rank scores its rows tp_rows(vocab) into "logits_part", reduces them
// to a (maximum, index) pair per row (Backend::max_rows) and only the pairs are gathered ("argmax_pairs"): 8 bytes
// per row and rank instead of the row. With `scores` (host [R, vocab]) the rows are gathered as on one rank and
// copied there too (after the mask). `edits` (LogitEdit rows numbered as x's, columns over the whole vocabulary) are
// applied after the mask (Backend::edit_logits): under TP each rank applies those of its own share. Leaves the
// stream synchronized.
void vocab_parallel_argmax(Backend& backend, Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                           const Tensor& head, int64_t vocab, const Tensor& allowed, std::span<int32_t> ids,
                           std::span<float> scores = {}, std::span<const LogitEdit> edits = {});

// top [R, k, 2] (host, every rank) = each row's k first (value, id) pairs (Backend::top_k_rows's order and empty
// slots) over the `vocab` columns of x [R, H] · headᵀ after `allowed` as in vocab_parallel_argmax: the answer of
// vocab_parallel_head + mask_columns + top_k_rows. One rank: exactly that. Under TP each rank takes the k first of its
// share (top_k_rows over "logits_part") and only those pairs are gathered ("top_pairs": 8·k bytes per row and rank);
// the k first of their union are the row's, as the order is total. `edits` as in vocab_parallel_argmax. Leaves the
// stream synchronized.
void vocab_parallel_top(Backend& backend, Communicator& comm, ScratchBuffers& scratch, const Tensor& x,
                        const Tensor& head, int64_t vocab, const Tensor& allowed, int32_t k, std::span<float> top,
                        std::span<const LogitEdit> edits = {});

// top [R, k, 2] (host) = Backend::top_k_rows of logits [R, V] on the backend, through scratch "top_pair". Leaves the
// stream synchronized.
void top_of_rows(Backend& backend, ScratchBuffers& scratch, const Tensor& logits, int32_t k, std::span<float> top);

// The merge of vocab_parallel_top: pairs [R, size, k, 2] (rank r's k first of its columns, indices within its share
// starting at tp_rows(vocab, r, size).begin) into top [R, k, 2], the k first of the whole row. Public for its test.
void merge_top_pairs(std::span<const float> pairs, int size, int64_t vocab, int32_t k, std::span<float> top);

// The rank-order reduction of vocab_parallel_argmax: pairs [R, 2·size] (rank r's (maximum, index) at columns 2r,
// 2r + 1, from max_rows with nan_first on rank 0 only), rank r's columns starting at tp_rows(vocab, r, size).begin.
// The first maximum of the whole row: std::max_element's answer over the ranks' columns side by side. Public for
// its test.
void reduce_argmax_pairs(std::span<const float> pairs, int size, int64_t vocab, std::span<int32_t> ids);

}  // namespace ninfer
