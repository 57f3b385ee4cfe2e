#include "engine/pack/quant_plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <regex>

#include <fmt/ranges.h>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/core/half.h"
#include "engine/model/weight_schema.h"
#include "engine/quant/nvfp4.h"

namespace ninfer {

std::vector<std::string> default_nvfp4_keep() {
  return {"*.linear_attn.in_proj_a.weight", "*.linear_attn.in_proj_b.weight",
          "mtp.*"};
}

bool glob_match(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++pi, ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++, mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1, si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*')
    ++pi;
  return pi == p.size();
}

Nvfp4Choice nvfp4_choice(const std::string &name,
                         std::span<const int64_t> shape,
                         const std::vector<std::string> &keep,
                         std::vector<bool> *keep_used) {
  bool matched = false;
  for (size_t i = 0; i < keep.size(); ++i)
    if (glob_match(keep[i], name)) {
      matched = true;
      if (keep_used)
        (*keep_used)[i] = true;
    }
  if (matched)
    return Nvfp4Choice::kKeptByPolicy;
  if (shape.size() != 2 ||
      shape[1] % static_cast<int64_t>(kNvfp4BlockSize) != 0)
    return Nvfp4Choice::kKeptByShape;
  return Nvfp4Choice::kQuantize;
}

std::string nvfp4_scale_group(const std::string &name) {
  static const std::regex re(
      R"(^(.*\.)(self_attn\.(q|k|v)_proj|mlp\.(gate|up)_proj|linear_attn\.in_proj_(qkv|z|a|b))\.weight$)");
  std::smatch m;
  if (!std::regex_match(name, m, re))
    return "";
  const std::string leaf = m[2].str();
  if (leaf.rfind("self_attn.", 0) == 0)
    return m[1].str() + "self_attn.qkv";
  if (leaf.rfind("mlp.", 0) == 0)
    return m[1].str() + "mlp.gate_up";
  return m[1].str() + "linear_attn.in";
}

std::vector<float> tensor_to_f32(const PlannedTensor &t) {
  const uint64_t n = *element_count(t.shape);
  std::vector<float> out(n);
  std::vector<std::byte> produced; // the bytes of a converted tensor (e.g. a
                                   // dequantized FP8 import)
  std::span<const std::byte> bytes = t.bytes;
  if (t.produce) {
    t.produce([&](std::span<const std::byte> piece) {
      produced.insert(produced.end(), piece.begin(), piece.end());
    });
    bytes = produced;
  }
  if (bytes.size() != n * dtype_element_bytes(t.dtype))
    fail(ErrorKind::kInternal, "{}: {} bytes for {} elements of {}", t.origin,
         bytes.size(), n, dtype_name(t.dtype));
  if (t.dtype == DType::kF32) {
    std::memcpy(out.data(), bytes.data(), n * 4);
    return out;
  }
  std::vector<uint16_t> h(n);
  std::memcpy(h.data(), bytes.data(), n * 2);
  if (t.dtype == DType::kBF16)
    bf16_to_f32(h.data(), out.data(), n);
  else if (t.dtype == DType::kF16)
    f16_to_f32(h.data(), out.data(), n);
  else
    fail(ErrorKind::kInternal, "{}: tensor_to_f32 of {}", t.origin,
         dtype_name(t.dtype));
  return out;
}

namespace {

bool plain_float(DType d) {
  return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16;
}

float amax_of(const std::vector<float> &w, const std::string &origin) {
  float a = 0.0f;
  for (size_t i = 0; i < w.size(); ++i) {
    if (!std::isfinite(w[i]))
      fail(ErrorKind::kInvalidArgument, "{}: element {} is {} (must be finite)",
           origin, i, w[i]);
    a = std::max(a, std::fabs(w[i]));
  }
  return a;
}

// `source` (a plain float [rows, cols] matrix) as nvfp4 tensor `name`,
// quantized by quantize_nvfp4 when the writer asks: with `scale_2` (a fused
// group's shared weight_scale_2) or with its own. Counts the bytes in `report`.
PlannedTensor quantized(const PlannedTensor &source, const std::string &name,
                        std::optional<float> scale_2,
                        const std::string &origin_note, QuantReport &report) {
  PlannedTensor q = source;
  q.name = name;
  q.dtype = DType::kNVFP4;
  q.origin = source.origin + origin_note;
  q.bytes = {};
  const uint64_t rows = static_cast<uint64_t>(source.shape[0]),
                 cols = static_cast<uint64_t>(source.shape[1]);
  q.produce = [source, scale_2, rows, cols](const ByteSink &sink) {
    const std::vector<float> w = tensor_to_f32(source);
    const std::array<int64_t, 2> shape = {source.shape[0], source.shape[1]};
    std::vector<std::byte> out(nvfp4_layout(shape)->total_bytes);
    if (scale_2)
      quantize_nvfp4(w.data(), rows, cols, *scale_2, out);
    else
      quantize_nvfp4(w.data(), rows, cols, out);
    sink(out);
  };
  report.bytes_before += *tensor_storage_bytes(source.dtype, source.shape);
  report.bytes_after += *tensor_storage_bytes(DType::kNVFP4, source.shape);
  return q;
}

} // namespace

QuantReport plan_nvfp4_quantization(const ModelConfig &config,
                                    const QuantOptions &options,
                                    TensorPlan &plan) {
  QuantReport report;
  const bool has_mtp = plan.find("mtp.fc.weight") != nullptr;
  std::vector<bool> keep_used(options.keep.size(), false);
  std::vector<const PlannedTensor *> chosen;
  for (const ExpectedWeight &w : expected_weights(config, has_mtp)) {
    if (w.kind != WeightKind::kProjection)
      continue;
    const PlannedTensor *t = plan.find(w.name);
    if (!t || !plain_float(t->dtype))
      continue; // missing (check_weights reports it) or already quantized
    const Nvfp4Choice choice =
        nvfp4_choice(w.name, t->shape, options.keep, &keep_used);
    if (choice == Nvfp4Choice::kKeptByShape)
      spdlog::warn("{}: shape [{}, {}] is not a whole number of 16-element "
                   "blocks; kept as {}",
                   w.name, t->shape[0], t->shape.size() > 1 ? t->shape[1] : 0,
                   dtype_name(t->dtype));
    if (choice != Nvfp4Choice::kQuantize)
      report.kept.push_back(w.name);
    else
      chosen.push_back(t);
  }
  const bool default_keep =
      options.keep ==
      default_nvfp4_keep(); // e.g. no mtp.* in a model without MTP
  for (size_t i = 0; i < options.keep.size(); ++i)
    if (!keep_used[i] && !default_keep)
      fail(ErrorKind::kInvalidArgument,
           "--quant-keep '{}' matches no projection of this model (projections "
           "look like "
           "'model.layers.0.mlp.up_proj.weight')",
           options.keep[i]);

  // Shared weight_scale_2 of each fused group: the largest member amax / 2688
  // (ModelOpt's export takes the max of the members' weight amax;
  // quantize_nvfp4 then runs with that scale for each member).
  std::map<std::string, float> group_amax;
  std::map<std::string, int> group_members;
  std::map<std::string, float> own_amax;
  for (const PlannedTensor *t : chosen) {
    const float a = amax_of(tensor_to_f32(*t), t->origin);
    own_amax[t->name] = a;
    if (options.scale_groups != Nvfp4ScaleGroups::kFused)
      continue;
    const std::string g = nvfp4_scale_group(t->name);
    if (g.empty())
      continue;
    group_amax[g] = std::max(group_amax[g], a);
    group_members[g]++;
  }

  for (const PlannedTensor *t : chosen) {
    const std::string g = options.scale_groups == Nvfp4ScaleGroups::kFused
                              ? nvfp4_scale_group(t->name)
                              : "";
    // A group of one, or an all-zero group, is quantized with its own scale
    // (identical, and the all-zero tensor keeps the documented scale_2 = 0
    // form).
    const bool shared =
        !g.empty() && group_members[g] > 1 && group_amax[g] > 0.0f;
    plan.replace(quantized(
        *t, t->name,
        shared ? std::optional<float>(nvfp4_weight_scale_2(group_amax[g]))
               : std::nullopt,
        shared ? " (nvfp4, scale shared by " + g + ")" : " (nvfp4)", report));
  }
  report.quantized = chosen.size();

  if (options.lm_head) {
    // The stored lm_head, or for a tied model a new one from the embedding
    // (which stays as it is for the lookups; the engine uses a stored
    // lm_head.weight over the tied embedding).
    const PlannedTensor *head = plan.find("lm_head.weight");
    const bool from_embedding = head == nullptr && config.tie_word_embeddings;
    if (from_embedding)
      head = plan.find("model.embed_tokens.weight");
    if (!head)
      fail(
          ErrorKind::kNotFound,
          "--quant-lm-head nvfp4: the model has no lm_head.weight to quantize");
    if (head->dtype == DType::kNVFP4) {
      spdlog::info("lm_head.weight is nvfp4 already");
    } else {
      if (!plain_float(head->dtype) ||
          nvfp4_choice(head->name, head->shape, {}) != Nvfp4Choice::kQuantize)
        fail(ErrorKind::kUnsupported,
             "--quant-lm-head nvfp4: {} is {} [{}], not a float matrix of "
             "whole 16-element "
             "blocks",
             head->origin, dtype_name(head->dtype),
             fmt::join(head->shape, ", "));
      PlannedTensor q =
          quantized(*head, "lm_head.weight", std::nullopt,
                    from_embedding ? " (nvfp4 lm_head from the tied embedding)"
                                   : " (nvfp4)",
                    report);
      q.section = "main";
      if (from_embedding)
        plan.add(std::move(q));
      else
        plan.replace(std::move(q));
      report.lm_head = true;
    }
  }
  return report;
}

} // namespace ninfer
