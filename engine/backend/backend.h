// Owns the backend op interface the model forward is written against (CPU now,
// CUDA later, same contract).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/logit_edit.h"
#include "engine/backend/tensor.h"

namespace ninfer {

// Device memory owned by a backend; freed when the last copy of the handle goes
// away.
struct Buffer {
  std::shared_ptr<void> memory;
  size_t bytes = 0;
  Device device = Device::kCpu;

  void *data() const { return memory.get(); }
  // A contiguous view of the start of the buffer; throws when it does not fit.
  Tensor view(DType dtype, std::initializer_list<int64_t> shape) const;
};

// A packed "varlen" batch of S sequences. Token rows of every activation tensor
// [T, ...] are grouped per sequence: sequence s owns rows [q_start[s],
// q_start[s+1]). All spans are HOST memory (a device backend copies them; they
// are a few bytes per sequence).
struct SeqBatch {
  std::span<const int32_t>
      q_start; // [S+1], q_start[0] = 0, q_start[S] = T, non-decreasing
  std::span<const int32_t> state_slot; // [S] row of the per-sequence state
                                       // pools (conv state, delta-rule state)
  // Optional per-row state checkpoints (speculative decoding,
  // docs/speculative.md): empty, or [T] where checkpoint_slot[t] >= 0 asks the
  // GDN state ops to also copy the sequence's state as it stands right after
  // row t into that slot of the same state tensor (−1 = no checkpoint for the
  // row). A checkpoint slot must not be any sequence's state_slot, nor repeat
  // within a sequence.
  std::span<const int32_t> checkpoint_slot = {};
  int64_t num_seqs() const { return static_cast<int64_t>(q_start.size()) - 1; }
};

// One attention layer's KV cache. K and V are tensors [num_blocks, block_size,
// n_kv_heads, head_dim] of dtype f32, bf16, f16 or i8. For i8 the scale tensors
// are f32 [num_blocks, block_size, n_kv_heads] (one dequantization scale per
// token and kv head: value = int8 · scale); for the float dtypes they are empty
// (data == nullptr).
struct KvLayer {
  Tensor k, v;
  Tensor k_scale, v_scale;
};

// Paged KV cache addressing for one attention call (the caches are KvLayer
// tensors). Token position p of sequence s lives in block block_table[s *
// max_blocks + p / block_size], row p % block_size.
struct PagedKv {
  std::span<const int32_t> q_start; // [S+1] as in SeqBatch
  std::span<const int32_t> seq_len; // [S] tokens of sequence s in the cache,
                                    // INCLUDING this step's new ones
  std::span<const int32_t>
      block_table;        // [S * max_blocks] physical block ids, row-major
  int32_t max_blocks = 0; // columns of block_table
  int64_t num_seqs() const { return static_cast<int64_t>(q_start.size()) - 1; }
};

// Ops recorded once and run again as a whole (a CUDA graph: one launch for a
// whole decode step, docs/cuda-graphs.md).
class OpGraph {
public:
  virtual ~OpGraph() = default;
  // Enqueues the recorded ops again, in stream order after everything enqueued
  // before. The host spans named as inputs when it was recorded are read again
  // now; every other host span an op uploaded keeps the contents it had then.
  // The previous replay must have completed (a synchronize() since).
  virtual void replay() = 0;
};

enum class DeltaRuleAlgo : uint8_t {
  kAuto, // the backend picks per sequence: chunked when a sequence brings
         // kDeltaRuleAutoChunkedMin or more rows and none has a checkpoint
  kRecurrent, // token by token (decode form)
  kChunked,   // chunks of 64 tokens, WY/UT form (prefill form); same result as
              // kRecurrent up to rounding
};

// kAuto's switch to the chunked form, on every backend (so that kAuto picks
// the same form, and the same rounding, on CPU and CUDA). On the CPU the
// chunked form is faster from 3 rows of one sequence (ninfer-bench-gdn,
// docs/benchmarks.md "The recurrent step"); 4 leaves a margin.
inline constexpr int64_t kDeltaRuleAutoChunkedMin = 4;
// max_rows and top_k_rows write a column index as an exact f32: rows of at most 2^24 columns.
inline constexpr int64_t kMaxRowsColumns = int64_t{1} << 24;
// top_k_rows keeps at most this many pairs per row (a sampler's top_k above it takes the rows to the host).
inline constexpr int64_t kTopKRowsMax = 64;

// Op contract, for every backend:
//  - Activations are f32 unless stated. Weights (w arguments) may be f32, bf16
//  or f16 and are read in place.
//  - "[T, N]" means shape; leading dimensions may be strided, the last is
//  contiguous. `y` may alias `x` where the
//    comment says "in place ok". Shapes and dtypes are checked; a mismatch
//    throws Error(kInvalidArgument) naming the op and the tensors. An
//    unsupported dtype throws Error(kUnsupported).
//  - Ops are enqueued in order on one stream; results are visible to later ops.
//  synchronize() waits for all.
//  - Faults in the DATA that only a device kernel can see (an int8 K/V row
//  holding inf/NaN, an index read on the
//    device out of range) may be thrown by a device backend at the next
//    synchronize() instead of by the op itself; argument checks (shapes,
//    dtypes, devices, host spans) always throw from the op.
class Backend {
public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0; // "cpu(avx2, 2 threads)"
  virtual Device device() const = 0;
  // Makes the calling thread run this backend's ops: a CUDA backend makes its
  // device the thread's current one (kernels launch on the current device).
  // Call on a thread other than the one that built the backend before its first
  // op there, and at each step on a thread that may drive other devices'
  // backends too.
  virtual void bind_thread() {}

  // ---- memory ----
  // Allocates `bytes` of device memory, 64-byte aligned, zero-filled.
  virtual Buffer alloc(size_t bytes) = 0;
  // dst <- src, same dtype and shape; either side may be host (Device::kCpu) or
  // this backend's device. Any leading strides on either side (the last
  // dimension contiguous, as for every op).
  virtual void copy(const Tensor &dst, const Tensor &src) = 0;
  // Fills a tensor with zeros (any dtype, any leading strides).
  virtual void zero(const Tensor &t) = 0;
  virtual void synchronize() = 0;

  // ---- op graphs (optional; docs/cuda-graphs.md) ----
  // Whether begin_graph_capture() works on this backend (CUDA; the CPU backend
  // has no launches to save).
  virtual bool graphs_supported() const { return false; }
  // From here to end_graph_capture(), ops on this thread are recorded, not run,
  // and may not allocate, grow a workspace or synchronize (each throws).
  // `inputs`: host spans the graph reads again at every replay (they must stay
  // at their addresses while the graph lives); an op's upload inside one of
  // them follows it. Run the same step eagerly once first, so that every buffer
  // it needs exists.
  virtual void
  begin_graph_capture(std::vector<std::span<const int32_t>> inputs);
  virtual std::unique_ptr<OpGraph> end_graph_capture();
  // Abandons a capture that failed part way (nothing when none is under way).
  virtual void abort_graph_capture() {}
  // Changes whenever memory that a recorded graph may point at was replaced (a
  // workspace grew): graphs recorded before must not be replayed.
  virtual uint64_t memory_epoch() const { return 0; }

  // ---- dense ----
  // y[M, N] = x[M, K] · w[N, K]ᵀ (+ y when accumulate). x, y f32; w
  // f32/bf16/f16 (an nn.Linear weight), or nvfp4 (the artifact's packed layout,
  // engine/artifact/dtype.h) read packed, with activations handled per the
  // backend's Nvfp4Activations mode (docs/nvfp4.md).
  virtual void linear(const Tensor &y, const Tensor &x, const Tensor &w,
                      bool accumulate = false) = 0;
  // y[T, H] = table[ids[t], :]. table [V, H] f32/bf16/f16; ids int32 [T] (host
  // span), each in [0, V).
  virtual void embedding(const Tensor &y, const Tensor &table,
                         std::span<const int32_t> ids) = 0;
  // y[R, N] = x[rows[r], :] (e.g. the last token of each sequence before the
  // lm_head). rows: host span.
  virtual void gather_rows(const Tensor &y, const Tensor &x,
                           std::span<const int32_t> rows) = 0;
  // ids[r] = the index of row r's maximum, x [R, V] f32 (rows at any
  // stride): the first maximum (ties go to the lower index), and a NaN is
  // never one unless it is at index 0, exactly as std::max_element over the
  // row. ids: host span [R], filled when the call returns (a device backend
  // waits for its stream, so not inside a graph capture). For greedy choices
  // without bringing whole logit rows to the host.
  virtual void argmax_rows(std::span<int32_t> ids, const Tensor &x) = 0;
  // best[r] = (m, i) for row r of x [R, V] f32 (rows at any stride, 1 ≤ V ≤
  // 2^24): m the row's maximum and i its first index, written as an exact
  // f32; NaN is never the maximum, and a row of NaN only gives (NaN, −1).
  // With `nan_first`, a NaN at index 0 gives (NaN, 0) instead, so i is
  // argmax_rows's answer (std::max_element's). best f32 [R, 2], contiguous,
  // on this backend's device; the op stays on the device (it may be recorded
  // into a graph). One rank's half of a vocabulary-parallel argmax: the
  // ranks' pairs, not their rows, are gathered (vocab_parallel_argmax).
  virtual void max_rows(const Tensor &best, const Tensor &x,
                        bool nan_first) = 0;
  // best[r, j] = (v, i), j < k: row r's k best entries of x [R, V] f32 (rows
  // at any stride, 1 ≤ V ≤ 2^24), in the order of top_pair_before
  // (engine/backend/top_pairs.h): larger value first, equal values by lower
  // index, NaN after every number; i written as an exact f32. Slots past V
  // hold (NaN, −1). best f32 [R, k, 2] with 1 ≤ k ≤ kTopKRowsMax, contiguous,
  // on this backend's device; the op stays on the device (graph-capturable).
  // A sampled step's top-k candidates (Sampler::candidates_needed) without the rows
  // leaving the device, and one rank's share of a vocabulary-parallel top-k.
  virtual void top_k_rows(const Tensor &best, const Tensor &x) = 0;
  // x[r, c] = −inf wherever allowed[c] == 0, in place (the ids a model may
  // not produce: padded vocabulary rows). x [R, V] f32 (rows at any stride);
  // allowed i8 [V], contiguous, on this backend's device.
  virtual void mask_columns(const Tensor &x, const Tensor &allowed) = 0;
  // x[e.row, e.col] = apply_logit_edit(x[e.row, e.col], e.add, e.scale,
  // e.sub) for each edit e, in place (engine/backend/logit_edit.h: the
  // samplers' logit_bias and penalties, the host's arithmetic). x [R, V] f32
  // (rows at any stride); edits a host span, strictly increasing by (row,
  // col), each inside x. Before argmax_rows / top_k_rows, so that requests
  // with penalties or a logit_bias keep their rows on the device too.
  virtual void edit_logits(const Tensor &x,
                           std::span<const LogitEdit> edits) = 0;

  // ---- elementwise / normalisation (shapes [..., N], any leading dims, in
  // place ok) ---- y = x · rsqrt(mean(x²) + eps) · (w + w_offset) over the last
  // dim. w [N] f32/bf16/f16. w_offset = 1 for Qwen3.5's zero-centred RMSNorm
  // ((1 + w), weights stored around 0), 0 for the plain one.
  virtual void rms_norm(const Tensor &y, const Tensor &x, const Tensor &w,
                        float eps, float w_offset) = 0;
  // The residual add and the norm after it, in one pass over the rows:
  // x ← x + delta (in place), then y = rms_norm(x) exactly as rms_norm would
  // compute it from the stored sum (same bits as add() then rms_norm()). x, y,
  // delta [..., N] f32; w [N] as for rms_norm. y must not alias x (the sum is
  // kept: it is the next residual); delta may be y.
  virtual void add_rms_norm(const Tensor &x, const Tensor &y,
                            const Tensor &delta, const Tensor &w, float eps,
                            float w_offset) = 0;
  // y = w · rmsnorm(x) · silu(z) over the last dim (Qwen3.5 GDN output norm;
  // norm before gate). x, z, y [..., N]; w [N] f32/bf16/f16 (plain w).
  virtual void gated_rms_norm(const Tensor &y, const Tensor &x, const Tensor &z,
                              const Tensor &w, float eps) = 0;
  // y = x · rsqrt(Σx² + eps) · scale over the last dim (GDN q/k l2norm; scale
  // folds dk^-½ into q).
  virtual void l2_norm(const Tensor &y, const Tensor &x, float eps,
                       float scale) = 0;
  // y = a + b (residual add). All [..., N].
  virtual void add(const Tensor &y, const Tensor &a, const Tensor &b) = 0;
  // y = silu(gate) · up (SwiGLU). All [..., N].
  virtual void silu_mul(const Tensor &y, const Tensor &gate,
                        const Tensor &up) = 0;
  // y = x · sigmoid(gate) (the attention output gate). All [..., N].
  virtual void sigmoid_mul(const Tensor &y, const Tensor &x,
                           const Tensor &gate) = 0;

  // ---- positional ----
  // In place on x [T, heads, head_dim] (q or k): neox "rotate-half" RoPE on the
  // first rotary_dim dims of each head, dims [rotary_dim, head_dim) untouched.
  // For i < rotary_dim/2, θ_i = positions[t] · theta^(−2i/rotary_dim): (x_i,
  // x_{i+r/2}) ← (x_i cos θ_i − x_{i+r/2} sin θ_i, x_{i+r/2} cos θ_i + x_i sin
  // θ_i). positions: host [T].
  virtual void rope(const Tensor &x, std::span<const int32_t> positions,
                    int64_t rotary_dim, double theta) = 0;

  // ---- attention over a paged KV cache ----
  // Stores this step's keys/values: k, v [T, n_kv, head_dim] f32 →
  // cache.k/cache.v rows slots[t] (slot = block * block_size + offset; a
  // negative slot skips the token). Converts to the cache dtype: f32/bf16/f16
  // rounded to nearest even; i8 quantized symmetrically per (token, kv head)
  // row: scale = amax/127 (f32), code = round-half-even(x / scale) in [−127,
  // 127], scale stored in cache.k_scale/v_scale[block, offset, head]; an
  // all-zero row gives scale 0 and codes 0; a row holding inf/NaN throws
  // Error(kInvalidArgument) (docs/kv-cache.md). A row depends only on its own
  // values, so chunked writes store exactly what one write would. i8 caches
  // need both scale tensors (f32 [num_blocks, block_size, n_kv]); float caches
  // must pass none. A missing, misshapen or mistyped scale throws
  // Error(kInvalidArgument) naming the op and the tensor (k_scale / v_scale).
  virtual void kv_write(const KvLayer &cache, const Tensor &k, const Tensor &v,
                        std::span<const int32_t> slots) = 0;
  // Causal GQA softmax attention. out, q [T, n_heads, head_dim] f32; query head
  // h uses kv head h / (n_heads / n_kv). Row i of sequence s is at position
  // seq_len[s] − n_new[s] + (i − q_start[s]) and attends to cache positions [0,
  // position]. scores = q·k · scale, softmax in f32. The new tokens must be
  // written first. An i8 cache is read in place: q·k = k_scale · Σ q·code, and
  // V rows enter as (p · v_scale) · code.
  virtual void attention(const Tensor &out, const Tensor &q,
                         const KvLayer &cache, const PagedKv &kv,
                         float scale) = 0;

  // ---- Gated DeltaNet ----
  // Causal depthwise conv1d over time with a carried state, then optional SiLU:
  //   out[t, c] = act(Σ_{j<K} w[c, j] · x̃[t + j, c]),  x̃ = concat(state rows, x
  //   rows of the sequence)
  // x, out [T, C] f32 (out must not alias x); w [C, K] f32/bf16/f16 (HF
  // conv1d.weight [C, 1, K] squeezed); state [slots, K−1, C] f32: the last K−1
  // RAW inputs of each sequence, oldest first (zeros for a new sequence);
  // updated in place with the newest K−1 raw inputs. With
  // batch.checkpoint_slot, the K−1 newest raw inputs up to and including row t
  // go to state row checkpoint_slot[t] (what the state would be had the
  // sequence ended at t).
  virtual void conv1d(const Tensor &out, const Tensor &x, const Tensor &w,
                      const Tensor &state, const SeqBatch &batch,
                      bool silu) = 0;
  // g = −exp(A_log) · softplus(a + dt_bias), beta = sigmoid(b). a, b, g, beta
  // [T, nv] f32; A_log, dt_bias [nv] f32/bf16/f16. softplus(x) = x for x > 20
  // (torch's threshold).
  virtual void gdn_gating(const Tensor &g, const Tensor &beta, const Tensor &a,
                          const Tensor &b, const Tensor &A_log,
                          const Tensor &dt_bias) = 0;
  // Gated delta rule, per value head h with key head h / (nv / nk) and state S
  // [dk, dv]:
  //   S ← exp(g_t) · S;  u = beta_t · (v_t − Sᵀ k_t);  S ← S + k_t uᵀ;  out_t =
  //   Sᵀ q_t
  // q, k [T, nk, dk] f32, ALREADY l2-normalised (q also scaled by dk^-½, see
  // l2_norm); v, out [T, nv, dv] f32; g, beta [T, nv] f32; state [slots, nv,
  // dk, dv] f32 (HF layout, S[k][v]), read and updated in place. With
  // batch.checkpoint_slot, S after row t is also copied to state row
  // checkpoint_slot[t]; a sequence with any checkpoint row runs in recurrent
  // form (kRecurrent whatever `algo` says), so each checkpoint equals the state
  // token-by-token decoding reaches, bit for bit.
  virtual void gated_delta_rule(const Tensor &out, const Tensor &q,
                                const Tensor &k, const Tensor &v,
                                const Tensor &g, const Tensor &beta,
                                const Tensor &state, const SeqBatch &batch,
                                DeltaRuleAlgo algo = DeltaRuleAlgo::kAuto) = 0;
};

// ---- the CPU backend ----
enum class CpuSimd : uint8_t {
  kAuto,   // AVX-512 dense GEMMs where the CPU has them, else AVX2+FMA+F16C, else scalar
  kScalar, // portable C++ only
  kAvx2,   // AVX2+FMA+F16C only (no AVX-512 kernels); throws Error(kUnsupported) on a CPU without them
};

// How linear() treats activations against an nvfp4 weight.
enum class Nvfp4Activations : uint8_t {
  kNvfp4, // W4A4: activations quantized to NVFP4 per 16 elements (the
          // checkpoint's input scale where it has one)
  kFloat, // W4A16: activations stay f32 (accuracy comparisons)
};

struct CpuBackendOptions {
  int threads = 0; // 0 = std::thread::hardware_concurrency()
  CpuSimd simd = CpuSimd::kAuto;
  Nvfp4Activations nvfp4_activations = Nvfp4Activations::kNvfp4;
  // The GEMM paths as they were before issue 23's change (activations packed
  // per task; the 4 x 1 AVX2 and AVX-512 W4A4 tiles), for before/after benches
  // in one binary. Same results.
  bool legacy_gemm = false;
  // bf16 weights: round the activations to bf16 and multiply them with
  // AVX512-BF16 vdpbf16ps where the CPU has it (llama.cpp's CPU bf16 path;
  // about twice the f32 FMA rate), else widen them back to f32 for the usual
  // GEMM. Off: f32 activations (exact products, the oracle's contract).
  bool bf16_activations = false;
};

std::unique_ptr<Backend>
make_cpu_backend(const CpuBackendOptions &options = {});
// Whether this CPU can run CpuSimd::kAvx2.
bool cpu_has_avx2_fma();

} // namespace ninfer
