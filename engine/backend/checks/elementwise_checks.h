// Owns the argument checks of the elementwise family (norms, pointwise ops, RoPE, embedding, gather_rows, argmax_rows, max_rows, top_k_rows, mask_columns, edit_logits) that every
// backend runs before computing, so the CPU and CUDA ops refuse the same arguments with the same errors.
#pragma once

#include <cstdint>
#include <span>

#include "engine/backend/logit_edit.h"
#include "engine/backend/tensor.h"

namespace ninfer {

// Each throws Error(kInvalidArgument) (kUnsupported for a weight dtype the op does not take) naming the op and the
// argument, with every tensor expected on `device`.

// rms_norm: x, y f32 of one shape; w [N] f32/bf16/f16.
void check_rms_norm(const Tensor& y, const Tensor& x, const Tensor& w, Device device);
// add_rms_norm: x, y, delta f32 of one shape; w [N]; y not x (y may be delta).
void check_add_rms_norm(const Tensor& x, const Tensor& y, const Tensor& delta, const Tensor& w, Device device);
// gated_rms_norm: x, z, y f32 of one shape; w [N].
void check_gated_rms_norm(const Tensor& y, const Tensor& x, const Tensor& z, const Tensor& w, Device device);
// l2_norm: x, y f32 of one shape.
void check_l2_norm(const Tensor& y, const Tensor& x, Device device);
// add / silu_mul / sigmoid_mul: a, b, y f32 of one shape (named a, b, y in the errors).
void check_binary(const char* op, const Tensor& y, const Tensor& a, const Tensor& b, Device device);
// rope: x f32 [T, heads, head_dim], positions [T] (host), rotary_dim even in (0, head_dim].
void check_rope(const Tensor& x, std::span<const int32_t> positions, int64_t rotary_dim, Device device);
// embedding: y f32 [T, H], table [V, H] f32/bf16/f16, ids [T] (host) each in [0, V).
void check_embedding(const Tensor& y, const Tensor& table, std::span<const int32_t> ids, Device device);
// gather_rows: x f32 [T, N], y f32 [R, N], rows [R] (host) each in [0, T).
void check_gather_rows(const Tensor& y, const Tensor& x, std::span<const int32_t> rows, Device device);
// argmax_rows: x f32 [R, V] with 1 ≤ V < 2^31, ids [R] (host).
void check_argmax_rows(std::span<const int32_t> ids, const Tensor& x, Device device);
// max_rows: x f32 [R, V] with 1 ≤ V ≤ 2^24 (an index exact in f32), best f32 [R, 2] contiguous.
void check_max_rows(const Tensor& best, const Tensor& x, Device device);
// top_k_rows: x f32 [R, V] with 1 ≤ V ≤ 2^24, best f32 [R, k, 2] contiguous with 1 ≤ k ≤ kTopKRowsMax.
void check_top_k_rows(const Tensor& best, const Tensor& x, Device device);
// mask_columns: x f32 [R, V], allowed i8 [V] contiguous.
void check_mask_columns(const Tensor& x, const Tensor& allowed, Device device);
// edit_logits: x f32 [R, V]; edits as check_logit_edits (logit_edit_checks.h) with R rows and V columns.
void check_edit_logits(const Tensor& x, std::span<const LogitEdit> edits, Device device);

}  // namespace ninfer
