#include "engine/model/weight_shard.h"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/core/aligned_buffer.h"
#include "engine/core/error.h"

namespace ninfer {

namespace {

struct Split {
  int64_t begin = 0, count = 0;
  bool replicated = false;
};

// `n_major` heads (query / GDN value) split evenly; `n_minor` heads (KV / GDN key; major head h reads minor head
// h / (n_major / n_minor)) split, or replicated one per rank when the ranks divide over them.
std::pair<Split, Split> split_heads(int64_t n_major, int64_t n_minor, int rank, int size, const char* what,
                                    const char* major, const char* minor) {
  if (n_major % size != 0)
    fail(ErrorKind::kInvalidArgument, "tensor parallelism: the {} {} heads do not divide over {} ranks", n_major,
         std::string(what) + " " + major, size);
  if (n_minor <= 0 || n_major % n_minor != 0)
    fail(ErrorKind::kInvalidArgument, "tensor parallelism: {} {} heads do not group over {} {} heads", n_major, major,
         n_minor, minor);
  Split a{n_major / size * rank, n_major / size, false};
  Split b;
  if (n_minor % size == 0) {
    b = {n_minor / size * rank, n_minor / size, false};
  } else if (size % n_minor == 0) {
    b = {a.begin / (n_major / n_minor), 1, true};
  } else {
    fail(ErrorKind::kInvalidArgument,
         "tensor parallelism: the {} {} {} heads neither divide over {} ranks nor {} ranks over them", n_minor, what,
         minor, size, size);
  }
  return {a, b};
}

}  // namespace

std::string TpLayout::describe() const {
  std::string s = fmt::format("rank {}/{}: attention heads [{}, {}), kv heads [{}, {}){}", rank, size, q_head0,
                              q_head0 + q_heads, kv_head0, kv_head0 + kv_heads, kv_replicated ? " (replicated)" : "");
  if (gdn_v_heads > 0)
    s += fmt::format(", gdn value heads [{}, {}), key heads [{}, {}){}", gdn_v_head0, gdn_v_head0 + gdn_v_heads,
                     gdn_k_head0, gdn_k_head0 + gdn_k_heads, gdn_k_replicated ? " (replicated)" : "");
  s += fmt::format(", mlp rows [{}, {}), vocab [{}, {})", inter0, inter0 + inter, vocab0, vocab0 + vocab);
  return s;
}

TpLayout tp_layout(const ModelConfig& c, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size)
    fail(ErrorKind::kInvalidArgument, "tensor parallelism: rank {} of {} ranks", rank, size);
  TpLayout l;
  l.rank = rank;
  l.size = size;
  if (c.num_full_attention_layers() > 0) {
    auto [q, kv] = split_heads(c.num_heads, c.num_kv_heads, rank, size, "attention", "query", "KV");
    l.q_head0 = q.begin, l.q_heads = q.count, l.kv_head0 = kv.begin, l.kv_heads = kv.count, l.kv_replicated = kv.replicated;
  }
  if (c.num_linear_attention_layers() > 0) {
    auto [v, k] = split_heads(c.linear_num_value_heads, c.linear_num_key_heads, rank, size, "GDN", "value", "key");
    l.gdn_v_head0 = v.begin, l.gdn_v_heads = v.count, l.gdn_k_head0 = k.begin, l.gdn_k_heads = k.count;
    l.gdn_k_replicated = k.replicated;
  }
  auto range = [&](int64_t n, int64_t& begin, int64_t& count) {
    const WeightShard::Range r = tp_rows(n, rank, size);
    begin = r.begin, count = r.end - r.begin;
  };
  range(c.intermediate_size, l.inter0, l.inter);
  range(c.vocab_size, l.vocab0, l.vocab);
  return l;
}

void log_tp_layouts(const ModelConfig& config, int size) {
  for (int r = 0; r < size; ++r) {
    const TpLayout layout = tp_layout(config, r, size);
    spdlog::info("tensor parallel {}", layout.describe());
    if (r == 0 && layout.kv_replicated)
      spdlog::info("tensor parallel: {} KV heads < {} ranks, each rank keeps a replica of the KV head its query heads "
                   "read", config.num_kv_heads, size);
    if (r == 0 && layout.gdn_k_replicated)
      spdlog::info("tensor parallel: {} GDN key heads < {} ranks, each rank keeps a replica of the key head its value "
                   "heads read", config.linear_num_key_heads, size);
  }
}

ModelConfig tp_rank_config(const ModelConfig& c, const TpLayout& l) {
  ModelConfig r = c;
  if (c.num_full_attention_layers() > 0) r.num_heads = l.q_heads, r.num_kv_heads = l.kv_heads;
  if (c.num_linear_attention_layers() > 0)
    r.linear_num_value_heads = l.gdn_v_heads, r.linear_num_key_heads = l.gdn_k_heads;
  r.intermediate_size = l.inter;
  return r;
}

std::byte* WeightShard::allocate(uint64_t bytes) {
  std::shared_ptr<void> p = aligned_zeroed(static_cast<size_t>(bytes));
  if (!p) fail(ErrorKind::kOutOfMemory, "tensor parallelism: cannot allocate {} bytes for a weight shard", bytes);
  owned_.blocks.push_back(p);
  owned_.bytes += bytes;
  return static_cast<std::byte*>(p.get());
}

Tensor WeightShard::rows(const Tensor& w, std::span<const Range> ranges, const std::string& name) {
  if (w.ndim != 1 && w.ndim != 2)
    fail(ErrorKind::kInvalidArgument, "weight shard of '{}': rank {} tensor {} (1 or 2 dims expected)", name, w.ndim,
         w.describe());
  const int64_t N = w.dim(0);
  int64_t total = 0;
  for (const Range& r : ranges) {
    if (r.begin < 0 || r.end > N || r.begin >= r.end)
      fail(ErrorKind::kInvalidArgument, "weight shard of '{}': rows [{}, {}) outside its {} rows", name, r.begin, r.end, N);
    total += r.end - r.begin;
  }
  const auto* src = static_cast<const std::byte*>(w.data);
  if (w.dtype == DType::kNVFP4) {
    const int64_t K = w.dim(1);
    const std::array<int64_t, 2> full_shape{N, K}, shard_shape{total, K};
    const auto from = nvfp4_layout(full_shape), to = nvfp4_layout(shard_shape);
    if (!from || !to) fail(ErrorKind::kInvalidArgument, "weight shard of '{}': {} is not an nvfp4 projection", name, w.describe());
    std::byte* dst = allocate(to->total_bytes);
    const uint64_t code_row = static_cast<uint64_t>(K) / 2, scale_row = static_cast<uint64_t>(K) / kNvfp4BlockSize;
    uint64_t out_row = 0;
    for (const Range& r : ranges) {
      const uint64_t n = static_cast<uint64_t>(r.end - r.begin), b = static_cast<uint64_t>(r.begin);
      std::memcpy(dst + out_row * code_row, src + b * code_row, n * code_row);
      std::memcpy(dst + to->scales_offset + out_row * scale_row, src + from->scales_offset + b * scale_row, n * scale_row);
      out_row += n;
    }
    std::memcpy(dst + to->tensor_scale_offset, src + from->tensor_scale_offset, kNvfp4TrailerBytes);
    return Tensor::make(dst, DType::kNVFP4, {total, K}, w.device);
  }
  const uint64_t eb = dtype_element_bytes(w.dtype);
  if (eb == 0) fail(ErrorKind::kUnsupported, "weight shard of '{}': dtype {}", name, dtype_name(w.dtype));
  const int64_t K = w.ndim == 2 ? w.dim(1) : 1;
  const int64_t stride = w.ndim == 2 ? w.row_stride() : 1;
  if (ranges.size() == 1) {  // one range: a view
    Tensor t = w;
    t.data = const_cast<std::byte*>(src + static_cast<uint64_t>(ranges[0].begin * stride) * eb);
    t.shape[0] = total;
    return t;
  }
  std::byte* dst = allocate(static_cast<uint64_t>(total * K) * eb);
  int64_t out_row = 0;
  for (const Range& r : ranges)
    for (int64_t row = r.begin; row < r.end; ++row, ++out_row)
      std::memcpy(dst + static_cast<uint64_t>(out_row * K) * eb, src + static_cast<uint64_t>(row * stride) * eb,
                  static_cast<uint64_t>(K) * eb);
  return w.ndim == 2 ? Tensor::make(dst, w.dtype, {total, K}, w.device) : Tensor::make(dst, w.dtype, {total}, w.device);
}

Tensor WeightShard::columns(const Tensor& w, Range r, const std::string& name) {
  if (w.ndim != 2)
    fail(ErrorKind::kInvalidArgument, "weight shard of '{}': {} is not a [N, K] projection", name, w.describe());
  const int64_t N = w.dim(0), K = w.dim(1), n = r.end - r.begin;
  if (r.begin < 0 || r.end > K || n <= 0)
    fail(ErrorKind::kInvalidArgument, "weight shard of '{}': columns [{}, {}) outside its {} columns", name, r.begin,
         r.end, K);
  const auto* src = static_cast<const std::byte*>(w.data);
  if (w.dtype == DType::kNVFP4) {
    const auto block = static_cast<int64_t>(kNvfp4BlockSize);
    if (r.begin % block != 0 || r.end % block != 0)
      fail(ErrorKind::kInvalidArgument,
           "tensor parallelism: nvfp4 tensor '{}' [{}, {}] would be split at columns [{}, {}), which breaks its "
           "16-element scale blocks; use a --tp whose share of its {} input columns is a multiple of 16, or pack "
           "this tensor in bf16",
           name, N, K, r.begin, r.end, K);
    const std::array<int64_t, 2> full_shape{N, K}, shard_shape{N, n};
    const auto from = nvfp4_layout(full_shape), to = nvfp4_layout(shard_shape);
    if (!from || !to) fail(ErrorKind::kInvalidArgument, "weight shard of '{}': {} is not an nvfp4 projection", name, w.describe());
    std::byte* dst = allocate(to->total_bytes);
    const uint64_t code_in = static_cast<uint64_t>(K) / 2, code_out = static_cast<uint64_t>(n) / 2;
    const uint64_t scale_in = static_cast<uint64_t>(K / block), scale_out = static_cast<uint64_t>(n / block);
    for (uint64_t row = 0; row < static_cast<uint64_t>(N); ++row) {
      std::memcpy(dst + row * code_out, src + row * code_in + static_cast<uint64_t>(r.begin) / 2, code_out);
      std::memcpy(dst + to->scales_offset + row * scale_out,
                  src + from->scales_offset + row * scale_in + static_cast<uint64_t>(r.begin / block), scale_out);
    }
    std::memcpy(dst + to->tensor_scale_offset, src + from->tensor_scale_offset, kNvfp4TrailerBytes);
    return Tensor::make(dst, DType::kNVFP4, {N, n}, w.device);
  }
  const uint64_t eb = dtype_element_bytes(w.dtype);
  if (eb == 0) fail(ErrorKind::kUnsupported, "weight shard of '{}': dtype {}", name, dtype_name(w.dtype));
  // Rows at the full row stride: a view (linear() takes strided weight rows).
  return Tensor::strided(const_cast<std::byte*>(src + static_cast<uint64_t>(r.begin) * eb), w.dtype, {N, n},
                         {w.row_stride(), 1}, w.device);
}

WeightShard::Range tp_rows(int64_t n, int rank, int size) {
  const WeightShard::Range r{n * rank / size, n * (rank + 1) / size};
  if (r.end <= r.begin)
    fail(ErrorKind::kInvalidArgument, "tensor parallelism: {} rows cannot be cut over {} ranks", n, size);
  return r;
}

LayerWeights shard_layer(WeightShard& shard, const LayerWeights& f, const ModelConfig& c, const TpLayout& l,
                         const std::string& p) {
  const int64_t hd = c.head_dim, per_head = c.attn_output_gate ? 2 * hd : hd;
  const int64_t nk = c.linear_num_key_heads, dk = c.linear_key_head_dim, dv = c.linear_value_head_dim;
  LayerWeights lw;
  lw.type = f.type;
  lw.input_norm = f.input_norm;
  lw.post_norm = f.post_norm;
  const WeightShard::Range mlp{l.inter0, l.inter0 + l.inter};
  lw.gate_proj = shard.rows(f.gate_proj, mlp, p + "mlp.gate_proj.weight");
  lw.up_proj = shard.rows(f.up_proj, mlp, p + "mlp.up_proj.weight");
  lw.down_proj = shard.columns(f.down_proj, mlp, p + "mlp.down_proj.weight");
  if (f.type == LayerType::kFullAttention) {
    const std::string a = p + "self_attn.";
    lw.attn.q_proj = shard.rows(f.attn.q_proj, {l.q_head0 * per_head, (l.q_head0 + l.q_heads) * per_head}, a + "q_proj.weight");
    const WeightShard::Range kv{l.kv_head0 * hd, (l.kv_head0 + l.kv_heads) * hd};
    lw.attn.k_proj = shard.rows(f.attn.k_proj, kv, a + "k_proj.weight");
    lw.attn.v_proj = shard.rows(f.attn.v_proj, kv, a + "v_proj.weight");
    lw.attn.o_proj = shard.columns(f.attn.o_proj, {l.q_head0 * hd, (l.q_head0 + l.q_heads) * hd}, a + "o_proj.weight");
    lw.attn.q_norm = f.attn.q_norm;
    lw.attn.k_norm = f.attn.k_norm;
  } else {
    const std::string g = p + "linear_attn.";
    // Conv channels (and in_proj_qkv rows) are [q (nk·dk) | k (nk·dk) | v (nv·dv)]: the rank's key heads in q and
    // k, its value heads in v.
    const int64_t k0 = l.gdn_k_head0 * dk, k1 = (l.gdn_k_head0 + l.gdn_k_heads) * dk;
    const int64_t v0 = l.gdn_v_head0 * dv, v1 = (l.gdn_v_head0 + l.gdn_v_heads) * dv;
    const WeightShard::Range qkv[] = {{k0, k1}, {nk * dk + k0, nk * dk + k1}, {2 * nk * dk + v0, 2 * nk * dk + v1}};
    const WeightShard::Range heads{l.gdn_v_head0, l.gdn_v_head0 + l.gdn_v_heads};
    lw.gdn.in_proj_qkv = shard.rows(f.gdn.in_proj_qkv, qkv, g + "in_proj_qkv.weight");
    lw.gdn.in_proj_z = shard.rows(f.gdn.in_proj_z, {v0, v1}, g + "in_proj_z.weight");
    lw.gdn.in_proj_b = shard.rows(f.gdn.in_proj_b, heads, g + "in_proj_b.weight");
    lw.gdn.in_proj_a = shard.rows(f.gdn.in_proj_a, heads, g + "in_proj_a.weight");
    lw.gdn.conv1d = shard.rows(f.gdn.conv1d, qkv, g + "conv1d.weight");
    lw.gdn.dt_bias = shard.rows(f.gdn.dt_bias, heads, g + "dt_bias");
    lw.gdn.A_log = shard.rows(f.gdn.A_log, heads, g + "A_log");
    lw.gdn.norm = f.gdn.norm;
    lw.gdn.out_proj = shard.columns(f.gdn.out_proj, {v0, v1}, g + "out_proj.weight");
  }
  return lw;
}

ModelWeights shard_weights(const ModelWeights& full, const ModelConfig& c, const TpLayout& l) {
  ModelWeights w;
  WeightShard shard(w.owned);
  w.owned = full.owned;
  w.embed = full.embed;  // replicated
  w.final_norm = full.final_norm;
  w.lm_head = shard.rows(full.lm_head, {l.vocab0, l.vocab0 + l.vocab}, "lm_head.weight");
  for (size_t i = 0; i < full.layers.size(); ++i)
    w.layers.push_back(shard_layer(shard, full.layers[i], c, l, fmt::format("model.layers.{}.", i)));
  return w;
}

}  // namespace ninfer
