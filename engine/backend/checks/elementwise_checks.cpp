#include "engine/backend/checks/elementwise_checks.h"

#include <cstdint>

#include "engine/backend/backend.h"
#include "engine/backend/checks/logit_edit_checks.h"
#include "engine/backend/op_checks.h"
#include "engine/core/error.h"

namespace ninfer {

void check_rms_norm(const Tensor& y, const Tensor& x, const Tensor& w, Device device) {
  check_f32_on("rms_norm", "x", x, device);
  check_f32_on("rms_norm", "y", y, device);
  check_same_shape("rms_norm", "y", y, x);
  check_vector_on("rms_norm", "w", w, x.row_size(), device);
}

void check_add_rms_norm(const Tensor& x, const Tensor& y, const Tensor& delta, const Tensor& w, Device device) {
  check_f32_on("add_rms_norm", "x", x, device);
  check_f32_on("add_rms_norm", "y", y, device);
  check_f32_on("add_rms_norm", "delta", delta, device);
  check_same_shape("add_rms_norm", "y", y, x);
  check_same_shape("add_rms_norm", "delta", delta, x);
  check_vector_on("add_rms_norm", "w", w, x.row_size(), device);
  if (y.data == x.data)
    fail(ErrorKind::kInvalidArgument, "add_rms_norm: y must not alias x (x keeps the residual sum), {}",
         x.describe());
}

void check_gated_rms_norm(const Tensor& y, const Tensor& x, const Tensor& z, const Tensor& w, Device device) {
  check_f32_on("gated_rms_norm", "x", x, device);
  check_f32_on("gated_rms_norm", "z", z, device);
  check_f32_on("gated_rms_norm", "y", y, device);
  check_same_shape("gated_rms_norm", "y", y, x);
  check_same_shape("gated_rms_norm", "z", z, x);
  check_vector_on("gated_rms_norm", "w", w, x.row_size(), device);
}

void check_l2_norm(const Tensor& y, const Tensor& x, Device device) {
  check_f32_on("l2_norm", "x", x, device);
  check_f32_on("l2_norm", "y", y, device);
  check_same_shape("l2_norm", "y", y, x);
}

void check_binary(const char* op, const Tensor& y, const Tensor& a, const Tensor& b, Device device) {
  check_f32_on(op, "a", a, device);
  check_f32_on(op, "b", b, device);
  check_f32_on(op, "y", y, device);
  check_same_shape(op, "b", b, a);
  check_same_shape(op, "y", y, a);
}

void check_rope(const Tensor& x, std::span<const int32_t> positions, int64_t rotary_dim, Device device) {
  check_f32_on("rope", "x", x, device);
  if (x.ndim != 3) fail(ErrorKind::kInvalidArgument, "rope: x must be [T, heads, head_dim], got {}", x.describe());
  const int64_t T = x.dim(0), D = x.dim(2);
  if (static_cast<int64_t>(positions.size()) != T)
    fail(ErrorKind::kInvalidArgument, "rope: {} positions for {} tokens", positions.size(), T);
  if (rotary_dim <= 0 || rotary_dim % 2 != 0 || rotary_dim > D)
    fail(ErrorKind::kInvalidArgument, "rope: rotary_dim {} must be even and in (0, head_dim={}]", rotary_dim, D);
}

void check_embedding(const Tensor& y, const Tensor& table, std::span<const int32_t> ids, Device device) {
  check_f32_on("embedding", "y", y, device);
  // The table may stay in host memory on a device backend (the embedding under tensor parallelism, docs/parallel.md).
  check_weight_on("embedding", "table", table, table.device == Device::kCpu ? Device::kCpu : device);
  if (table.ndim != 2) fail(ErrorKind::kInvalidArgument, "embedding: table must be [V, H], got {}", table.describe());
  check_dims("embedding", "y", y, {static_cast<int64_t>(ids.size()), table.dim(1)});
  const int64_t V = table.dim(0);
  for (size_t t = 0; t < ids.size(); ++t)
    if (ids[t] < 0 || ids[t] >= V)
      fail(ErrorKind::kInvalidArgument, "embedding: token id {} at row {} outside [0, {})", ids[t], t, V);
}

void check_gather_rows(const Tensor& y, const Tensor& x, std::span<const int32_t> rows, Device device) {
  check_f32_on("gather_rows", "y", y, device);
  check_f32_on("gather_rows", "x", x, device);
  if (x.ndim != 2) fail(ErrorKind::kInvalidArgument, "gather_rows: x must be [T, N], got {}", x.describe());
  check_dims("gather_rows", "y", y, {static_cast<int64_t>(rows.size()), x.dim(1)});
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r] < 0 || rows[r] >= x.dim(0))
      fail(ErrorKind::kInvalidArgument, "gather_rows: row {} outside [0, {})", rows[r], x.dim(0));
}

void check_argmax_rows(std::span<const int32_t> ids, const Tensor& x, Device device) {
  check_f32_on("argmax_rows", "x", x, device);
  if (x.ndim != 2) fail(ErrorKind::kInvalidArgument, "argmax_rows: x must be [R, V], got {}", x.describe());
  if (x.dim(1) < 1 || x.dim(1) > INT32_MAX)
    fail(ErrorKind::kInvalidArgument, "argmax_rows: rows of {} elements (1 to 2^31 - 1 take an int32 index), {}",
         x.dim(1), x.describe());
  if (static_cast<int64_t>(ids.size()) != x.dim(0))
    fail(ErrorKind::kInvalidArgument, "argmax_rows: ids holds {} entries for the {} rows of {}", ids.size(), x.dim(0),
         x.describe());
}

void check_max_rows(const Tensor& best, const Tensor& x, Device device) {
  check_f32_on("max_rows", "x", x, device);
  if (x.ndim != 2) fail(ErrorKind::kInvalidArgument, "max_rows: x must be [R, V], got {}", x.describe());
  if (x.dim(1) < 1 || x.dim(1) > kMaxRowsColumns)
    fail(ErrorKind::kInvalidArgument, "max_rows: rows of {} elements (1 to 2^24, an index exact in f32), {}", x.dim(1),
         x.describe());
  check_f32_on("max_rows", "best", best, device);
  check_dims("max_rows", "best", best, {x.dim(0), 2});
  if (!best.is_contiguous())
    fail(ErrorKind::kInvalidArgument, "max_rows: best must be contiguous, got {}", best.describe());
}

void check_top_k_rows(const Tensor& best, const Tensor& x, Device device) {
  check_f32_on("top_k_rows", "x", x, device);
  if (x.ndim != 2) fail(ErrorKind::kInvalidArgument, "top_k_rows: x must be [R, V], got {}", x.describe());
  if (x.dim(1) < 1 || x.dim(1) > kMaxRowsColumns)
    fail(ErrorKind::kInvalidArgument, "top_k_rows: rows of {} elements (1 to 2^24, an index exact in f32), {}",
         x.dim(1), x.describe());
  check_f32_on("top_k_rows", "best", best, device);
  if (best.ndim != 3 || best.dim(0) != x.dim(0) || best.dim(2) != 2 || best.dim(1) < 1 || best.dim(1) > kTopKRowsMax)
    fail(ErrorKind::kInvalidArgument, "top_k_rows: best must be [{}, k, 2] with 1 ≤ k ≤ {}, got {}", x.dim(0),
         kTopKRowsMax, best.describe());
  if (!best.is_contiguous())
    fail(ErrorKind::kInvalidArgument, "top_k_rows: best must be contiguous, got {}", best.describe());
}

void check_mask_columns(const Tensor& x, const Tensor& allowed, Device device) {
  check_f32_on("mask_columns", "x", x, device);
  if (x.ndim != 2) fail(ErrorKind::kInvalidArgument, "mask_columns: x must be [R, V], got {}", x.describe());
  check_on("mask_columns", "allowed", allowed, device);
  if (allowed.dtype != DType::kI8)
    fail(ErrorKind::kUnsupported, "mask_columns: allowed must be i8 (1 = allowed, 0 = masked), got {}", allowed.describe());
  check_dims("mask_columns", "allowed", allowed, {x.dim(1)});
}

void check_edit_logits(const Tensor& x, std::span<const LogitEdit> edits, Device device) {
  check_f32_on("edit_logits", "x", x, device);
  if (x.ndim != 2) fail(ErrorKind::kInvalidArgument, "edit_logits: x must be [R, V], got {}", x.describe());
  check_logit_edits("edit_logits", edits, x.dim(0), x.dim(1));
}

}  // namespace ninfer
