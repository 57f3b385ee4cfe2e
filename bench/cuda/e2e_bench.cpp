#include "bench/cuda/e2e_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/artifact/dtype.h"
#include "engine/backend/cuda_backend.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/model/weight_shard.h"
#include "engine/plan/plan_tensors.h"
#include "engine/runtime/model_runner.h"

namespace ninfer::bench {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int64_t kBlock = 16;
constexpr int32_t kTokenRows = 4096;  // embedding rows with values (the prompts use ids below this)

// The model's weights made on the device: NVFP4 codes random, block scales e4m3 1.0, weight_scale_2 small enough that
// activations stay finite through every layer; the used embedding rows random bf16 in (−1, 1); everything else zero
// (norms then act as the identity: Qwen3.5 adds 1 to its norm weights). Values do not change what a step reads.
class DeviceWeights {
 public:
  DeviceWeights(Backend& be, const ModelConfig& c) {
    std::mt19937_64 rng(1);
    pattern_.resize(size_t{16} << 20);
    for (auto& b : pattern_) b = static_cast<uint8_t>(rng());
    for (const PlanTensor& t : plan_tensors_from_config(c, PlanQuant::kNvfp4)) {
      if (t.section != "main") continue;
      size_t bytes = 0;
      if (t.dtype == DType::kNVFP4) {
        bytes = nvfp4_layout(t.shape)->total_bytes;
      } else {
        int64_t n = 1;
        for (int64_t d : t.shape) n *= d;
        bytes = static_cast<size_t>(n) * dtype_element_bytes(t.dtype);
      }
      Buffer b = be.alloc(bytes);
      Tensor v = Tensor::make(b.data(), DType::kI8, {static_cast<int64_t>(bytes)}, Device::kCuda);
      if (t.dtype == DType::kNVFP4) {
        fill_nvfp4(be, v, t.shape);
        device_bytes_ += bytes;
      } else if (t.name == "model.embed_tokens.weight") {
        fill_embedding(be, b, t.shape);  // one row read per token: not part of a step's weight traffic
      } else {
        device_bytes_ += bytes;
      }
      tensors_[t.name] = Tensor::make(b.data(), t.dtype, t.shape, Device::kCuda);
      buffers_.push_back(std::move(b));
    }
  }

  ModelWeights bind(const ModelConfig& c) const {
    return ModelWeights::bind([&](const std::string& name) { return tensors_.at(name); },
                              tensors_.count("lm_head.weight") > 0, c);
  }
  // Bytes a batch-1 decode step reads from the weights (all but the embedding table).
  uint64_t step_bytes() const { return device_bytes_; }

 private:
  void upload(Backend& be, const Tensor& dst_bytes, std::vector<uint8_t>& host) {
    be.copy(dst_bytes, Tensor::make(host.data(), DType::kI8, {dst_bytes.dim(0)}, Device::kCpu));
    be.synchronize();
  }
  void fill_nvfp4(Backend& be, const Tensor& bytes, const std::vector<int64_t>& shape) {
    const Nvfp4Layout L = *nvfp4_layout(shape);
    host_.resize(static_cast<size_t>(bytes.dim(0)));
    for (size_t at = 0; at < L.scales_offset; at += pattern_.size())
      std::memcpy(host_.data() + at, pattern_.data(), std::min(pattern_.size(), L.scales_offset - at));
    std::memset(host_.data() + L.scales_offset, 0x38, L.tensor_scale_offset - L.scales_offset);  // e4m3 1.0
    std::memset(host_.data() + L.tensor_scale_offset, 0, L.total_bytes - L.tensor_scale_offset);
    const float trailer[2] = {1e-3f, 0.0f};  // weight_scale_2, input_scale (0: dynamic)
    std::memcpy(host_.data() + L.tensor_scale_offset, trailer, sizeof(trailer));
    upload(be, bytes, host_);
  }
  void fill_embedding(Backend& be, const Buffer& b, const std::vector<int64_t>& shape) {
    const int64_t rows = std::min<int64_t>(shape[0], kTokenRows), H = shape[1];
    std::vector<uint16_t> host(static_cast<size_t>(rows * H));
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& h : host) {
      const float f = u(rng);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      h = static_cast<uint16_t>(bits >> 16);
    }
    be.copy(Tensor::make(b.data(), DType::kBF16, {rows, H}, Device::kCuda),
            Tensor::make(host.data(), DType::kBF16, {rows, H}, Device::kCpu));
    be.synchronize();
  }

  std::vector<uint8_t> pattern_, host_;
  std::map<std::string, Tensor> tensors_;
  std::vector<Buffer> buffers_;
  uint64_t device_bytes_ = 0;
};

struct Row {
  int64_t context = 0;
  const char* gemv = "";
  bool graphs = false;
  double prefill_tok_s = 0, decode_tok_s = 0, step_bytes = 0;
  int64_t replays = 0;
};

}  // namespace

int run_e2e_bench(const E2eOptions& o, Backend& be, double bw) {
  std::ifstream in(o.config);
  if (!in) {
    fmt::print(stderr, "ninfer-bench-cuda --e2e: cannot read {} (run from the repository root, or pass --config)\n",
               o.config);
    return 2;
  }
  const ModelConfig full = ModelConfig::from_hf_json(nlohmann::json::parse(in), o.config);
  ModelConfig c = full;
  if (o.tp > 1) {  // one GPU's shard: its heads, MLP rows and vocabulary rows (the collectives are not run)
    const TpLayout layout = tp_layout(full, 0, o.tp);
    c = tp_rank_config(full, layout);
    c.vocab_size = layout.vocab;
  }
  const auto t_load = Clock::now();
  DeviceWeights weights(be, c);
  fmt::print(stderr, "weights made on the device in {:.1f} s: {:.2f} GB read per decode step\n", seconds_since(t_load),
             static_cast<double>(weights.step_bytes()) / 1e9);

  // Per decode step besides the weights: the int8 KV of every context token (codes + a scale per KV head, K and V)
  // and the GDN state read and written (f32 [nv, dk, dv] per layer) plus its conv state.
  const double kv_per_token = static_cast<double>(c.num_full_attention_layers() * 2 * c.num_kv_heads * (c.head_dim + 4));
  const double gdn_state = static_cast<double>(c.num_linear_attention_layers()) * 2.0 * 4.0 *
                           static_cast<double>(c.linear_num_value_heads * c.linear_key_head_dim * c.linear_value_head_dim +
                                               (c.linear_conv_kernel - 1) * c.linear_conv_dim());
  const int64_t max_context = *std::max_element(o.contexts.begin(), o.contexts.end());

  std::vector<Row> rows;
  for (auto [kernels, gemv] : {std::pair{W4a4Decode::kTiled, "tiled"}, std::pair{W4a4Decode::kStream, "stream"}}) {
    for (bool graphs : {false, true}) {
      // A backend of its own per W4A4 kernel set, on the weights' device (one context: the weights are usable there).
      std::unique_ptr<Backend> run_be = make_cuda_backend({.device = o.device, .w4a4_decode = kernels});
      Backend& be_run = *run_be;
      Model model(c, weights.bind(c), be_run);
      model.enable_step_graphs(graphs);
      KvCache kv(be_run, c, KvCacheConfig{.block_size = kBlock,
                                       .num_blocks = (max_context + o.decode_steps + 4 + kBlock - 1) / kBlock + 1,
                                       .dtype = DType::kI8});
      LinearStateCache state(be_run, c, 1, 0, 0);
      ModelRunner runner(model, kv, state);
      SeqId id = 0;
      for (int64_t context : o.contexts) {
        ++id;
        const int32_t slot = state.acquire();
        const int32_t row = state.row(slot);  // the slot's live GDN state row (SequenceStep::state_row)
        std::vector<int32_t> prompt(static_cast<size_t>(context));
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919) % kTokenRows);
        const auto t0 = Clock::now();
        for (int64_t at = 0; at < context; at += o.prefill_chunk) {
          const int64_t n = std::min(o.prefill_chunk, context - at);
          const SequenceStep s{id, row, at, std::span(prompt).subspan(static_cast<size_t>(at), static_cast<size_t>(n))};
          runner.step(std::span(&s, 1));
        }
        Row r{context, gemv, graphs};
        r.prefill_tok_s = static_cast<double>(context) / seconds_since(t0);
        int64_t pos = context;
        int32_t token = 1;
        auto decode = [&] {  // as greedy serving steps: the argmax on the device, one id back (ModelRunner::step_argmax)
          const SequenceStep s{id, row, pos++, std::span(&token, 1)};
          runner.step_argmax(std::span(&s, 1));
        };
        decode(), decode();  // a shape's first step runs eagerly, the second records its graph
        const int64_t replays0 = graphs ? model.step_graph_stats()->replays : 0;
        const auto t1 = Clock::now();
        for (int i = 0; i < o.decode_steps; ++i) decode();
        r.decode_tok_s = o.decode_steps / seconds_since(t1);
        r.replays = graphs ? model.step_graph_stats()->replays - replays0 : 0;
        r.step_bytes = static_cast<double>(weights.step_bytes()) + kv_per_token * static_cast<double>(context) + gdn_state;
        rows.push_back(r);
        kv.release(id);
        state.release(slot);
      }
    }
  }

  fmt::print("model: {} ({}), {}; {} layers ({} GDN + {} attention), hidden {}, NVFP4 W4A4, int8 KV, batch 1\n",
             o.config, c.model_type, o.tp > 1 ? fmt::format("one GPU's shard of TP{}", o.tp) : std::string("whole"),
             c.num_layers, c.num_linear_attention_layers(), c.num_full_attention_layers(), c.hidden_size);
  fmt::print("device: {}; copy bandwidth (read + write) {:.1f} GB/s, same run\n\n", be.name(), bw / 1e9);
  fmt::print("| context | W4A4 decode | step graphs | prefill tok/s | decode tok/s | decode step ms | GB read per step "
             "| roofline tok/s | decode % of roofline | steps from graphs |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows)
    fmt::print("| {} | {} | {} | {:.0f} | {:.1f} | {:.2f} | {:.3f} | {:.1f} | {:.0f}% | {} |\n", r.context, r.gemv,
               r.graphs ? "on" : "off", r.prefill_tok_s, r.decode_tok_s, 1e3 / r.decode_tok_s, r.step_bytes / 1e9,
               bw / r.step_bytes, 100.0 * r.decode_tok_s * r.step_bytes / bw, r.graphs ? std::to_string(r.replays) : "-");
  return 0;
}

}  // namespace ninfer::bench
