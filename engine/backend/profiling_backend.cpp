#include "engine/backend/profiling_backend.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "engine/core/error.h"

namespace ninfer {

void OpProfile::add(const std::string& op, double seconds, double flops) {
  std::lock_guard lock(mu_);
  Entry& e = by_op_[op];
  e.op = op;
  ++e.calls;
  e.seconds += seconds;
  e.flops += flops;
}

void OpProfile::clear() {
  std::lock_guard lock(mu_);
  by_op_.clear();
}

std::vector<OpProfile::Entry> OpProfile::entries() const {
  std::vector<Entry> out;
  {
    std::lock_guard lock(mu_);
    for (const auto& [op, e] : by_op_) out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.seconds > b.seconds; });
  return out;
}

double OpProfile::total_seconds() const {
  std::lock_guard lock(mu_);
  double s = 0;
  for (const auto& [op, e] : by_op_) s += e.seconds;
  return s;
}

std::string OpProfile::table() const {
  const std::vector<Entry> all = entries();
  const double total = total_seconds();
  std::string s = "| op | calls | ms | share | GFLOP/s |\n|---|---|---|---|---|\n";
  for (const Entry& e : all)
    s += fmt::format("| {} | {} | {:.1f} | {:.1f}% | {} |\n", e.op, e.calls, e.seconds * 1e3,
                     total > 0 ? 100.0 * e.seconds / total : 0.0,
                     e.flops > 0 && e.seconds > 0 ? fmt::format("{:.1f}", e.flops / e.seconds / 1e9) : std::string("–"));
  s += fmt::format("| all ops | | {:.1f} | 100% | |\n", total * 1e3);
  return s;
}

ProfilingBackend::ProfilingBackend(std::unique_ptr<Backend> inner, std::shared_ptr<OpProfile> profile)
    : inner_(std::move(inner)), profile_(std::move(profile)) {
  if (!inner_ || !profile_) fail(ErrorKind::kInternal, "ProfilingBackend without a backend or a profile");
  sync_ = inner_->device() != Device::kCpu;
}

template <typename Op>
void ProfilingBackend::timed(const std::string& label, double flops, Op&& op) {
  if (sync_) inner_->synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  op();
  if (sync_) inner_->synchronize();
  profile_->add(label, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), flops);
}

void ProfilingBackend::copy(const Tensor& dst, const Tensor& src) {
  timed("copy", 0, [&] { inner_->copy(dst, src); });
}

void ProfilingBackend::zero(const Tensor& t) {
  timed("zero", 0, [&] { inner_->zero(t); });
}

void ProfilingBackend::linear(const Tensor& y, const Tensor& x, const Tensor& w, bool accumulate) {
  // Labelled by weight dtype and by row count: one row (decode), a few (verify, small batches), many (prefill).
  const int64_t M = x.rows();
  const char* rows = M <= 1 ? "M=1" : M <= 8 ? "M=2..8" : "M>8";
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(y.row_size()) * static_cast<double>(x.row_size());
  timed(fmt::format("linear {} {}", dtype_name(w.dtype), rows), flops, [&] { inner_->linear(y, x, w, accumulate); });
}

void ProfilingBackend::embedding(const Tensor& y, const Tensor& table, std::span<const int32_t> ids) {
  timed("embedding", 0, [&] { inner_->embedding(y, table, ids); });
}

void ProfilingBackend::gather_rows(const Tensor& y, const Tensor& x, std::span<const int32_t> rows) {
  timed("gather_rows", 0, [&] { inner_->gather_rows(y, x, rows); });
}

void ProfilingBackend::max_rows(const Tensor& best, const Tensor& x, bool nan_first) {
  timed("max_rows", 0, [&] { inner_->max_rows(best, x, nan_first); });
}

void ProfilingBackend::top_k_rows(const Tensor& best, const Tensor& x) {
  timed("top_k_rows", 0, [&] { inner_->top_k_rows(best, x); });
}

void ProfilingBackend::mask_columns(const Tensor& x, const Tensor& allowed) {
  timed("mask_columns", 0, [&] { inner_->mask_columns(x, allowed); });
}

void ProfilingBackend::edit_logits(const Tensor& x, std::span<const LogitEdit> edits) {
  timed("edit_logits", 0, [&] { inner_->edit_logits(x, edits); });
}

void ProfilingBackend::argmax_rows(std::span<int32_t> ids, const Tensor& x) {
  timed("argmax_rows", 0, [&] { inner_->argmax_rows(ids, x); });
}

void ProfilingBackend::rms_norm(const Tensor& y, const Tensor& x, const Tensor& w, float eps, float w_offset) {
  timed("rms_norm", 0, [&] { inner_->rms_norm(y, x, w, eps, w_offset); });
}

void ProfilingBackend::add_rms_norm(const Tensor& x, const Tensor& y, const Tensor& delta, const Tensor& w,
                                    float eps, float w_offset) {
  timed("add_rms_norm", 0, [&] { inner_->add_rms_norm(x, y, delta, w, eps, w_offset); });
}

void ProfilingBackend::gated_rms_norm(const Tensor& y, const Tensor& x, const Tensor& z, const Tensor& w, float eps) {
  timed("gated_rms_norm", 0, [&] { inner_->gated_rms_norm(y, x, z, w, eps); });
}

void ProfilingBackend::l2_norm(const Tensor& y, const Tensor& x, float eps, float scale) {
  timed("l2_norm", 0, [&] { inner_->l2_norm(y, x, eps, scale); });
}

void ProfilingBackend::add(const Tensor& y, const Tensor& a, const Tensor& b) {
  timed("add", 0, [&] { inner_->add(y, a, b); });
}

void ProfilingBackend::silu_mul(const Tensor& y, const Tensor& gate, const Tensor& up) {
  timed("silu_mul", 0, [&] { inner_->silu_mul(y, gate, up); });
}

void ProfilingBackend::sigmoid_mul(const Tensor& y, const Tensor& x, const Tensor& gate) {
  timed("sigmoid_mul", 0, [&] { inner_->sigmoid_mul(y, x, gate); });
}

void ProfilingBackend::rope(const Tensor& x, std::span<const int32_t> positions, int64_t rotary_dim, double theta) {
  timed("rope", 0, [&] { inner_->rope(x, positions, rotary_dim, theta); });
}

void ProfilingBackend::kv_write(const KvLayer& cache, const Tensor& k, const Tensor& v, std::span<const int32_t> slots) {
  timed("kv_write", 0, [&] { inner_->kv_write(cache, k, v, slots); });
}

void ProfilingBackend::attention(const Tensor& out, const Tensor& q, const KvLayer& cache, const PagedKv& kv,
                                 float scale) {
  timed("attention", 0, [&] { inner_->attention(out, q, cache, kv, scale); });
}

void ProfilingBackend::conv1d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& state,
                              const SeqBatch& batch, bool silu) {
  timed("conv1d", 0, [&] { inner_->conv1d(out, x, w, state, batch, silu); });
}

void ProfilingBackend::gdn_gating(const Tensor& g, const Tensor& beta, const Tensor& a, const Tensor& b,
                                  const Tensor& A_log, const Tensor& dt_bias) {
  timed("gdn_gating", 0, [&] { inner_->gdn_gating(g, beta, a, b, A_log, dt_bias); });
}

void ProfilingBackend::gated_delta_rule(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& g, const Tensor& beta, const Tensor& state, const SeqBatch& batch,
                                        DeltaRuleAlgo algo) {
  timed("gated_delta_rule", 0, [&] { inner_->gated_delta_rule(out, q, k, v, g, beta, state, batch, algo); });
}

}  // namespace ninfer
