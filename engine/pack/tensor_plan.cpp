#include "engine/pack/tensor_plan.h"

#include <array>
#include <cstring>
#include <set>

#include <fmt/ranges.h>

#include "engine/core/error.h"
#include "engine/core/half.h"
#include "engine/pack/packer.h"

namespace ninfer {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

PlannedTensor plain_tensor(const SafetensorsTensor& t, const std::string& file) {
  CanonicalName cn = canonical_tensor_name(t.name);
  std::string origin = fmt::format("{}: '{}'", file, t.name);
  if (!t.dtype)
    fail(ErrorKind::kUnsupported, "{}: tensor '{}' has dtype {}, which ninfer-pack cannot store as-is (supported: F32, "
         "F16, BF16, I8, I32, F8_E4M3; NVFP4 parts only in a checkpoint whose config declares NVFP4)", file, t.name,
         t.st_dtype);
  return {cn.name, cn.section, *t.dtype, t.shape, origin, t.data, {}};
}

float scalar_f32(const SafetensorsTensor& t, const std::string& dir) {
  if (t.st_dtype != "F32" || t.data.size() != 4)
    fail(ErrorKind::kCorrupt, "{}: '{}' must be one F32 value, found {} [{}]", dir, t.name, t.st_dtype,
         fmt::join(t.shape, ", "));
  float v;
  std::memcpy(&v, t.data.data(), 4);
  return v;
}

// The shard that holds `name`, for messages.
std::string shard_path(const HfCheckpoint& ck, const std::string& name) {
  for (const auto& shard : ck.shards)
    if (shard.tensors().count(name)) return shard.path();
  return ck.dir;
}

// Every block-wise FP8 weight of the checkpoint as a bf16 tensor; the names it consumed go into `used`.
void plan_fp8_weights(const HfCheckpoint& ck, const Fp8BlockwiseFormat& format, TensorPlan& plan,
                      std::set<std::string>& used) {
  static constexpr std::string_view kScaleSuffix = "_scale_inv";
  for (const auto& [name, t] : ck.tensors) {
    if (ends_with(name, kScaleSuffix)) {
      const std::string weight_name = name.substr(0, name.size() - kScaleSuffix.size());
      if (!ck.tensors.count(weight_name))
        fail(ErrorKind::kCorrupt, "{}: scale tensor '{}' {} [{}] has no weight '{}'", shard_path(ck, name), name,
             t->st_dtype, fmt::join(t->shape, ", "), weight_name);
      continue;
    }
    for (std::string_view part : {".input_scale", ".activation_scale", ".weight_scale"})
      if (ends_with(name, part))
        fail(ErrorKind::kUnsupported, "{}: tensor '{}' ({} [{}]) is a quantization part ninfer-pack does not import "
             "(block-wise FP8: weight and weight_scale_inv only)", shard_path(ck, name), name, t->st_dtype,
             fmt::join(t->shape, ", "));
    if (t->st_dtype != "F8_E4M3") continue;
    const std::string file = shard_path(ck, name);
    const std::string scale_name = fp8_scale_name(name);
    auto scale_it = ck.tensors.find(scale_name);
    if (scale_it == ck.tensors.end())
      fail(ErrorKind::kCorrupt, "{}: FP8 weight '{}' {} [{}] has no scale tensor '{}' (weight_block_size [{}, {}])",
           file, name, t->st_dtype, fmt::join(t->shape, ", "), scale_name, format.block_rows, format.block_cols);
    check_fp8_blockwise(*t, *scale_it->second, format, file);
    used.insert({name, scale_name});
    const CanonicalName cn = canonical_tensor_name(name);
    const std::vector<int64_t> shape = t->shape;
    const auto weight = t->data, scales = scale_it->second->data;
    const std::string origin = fmt::format("{}: '{}' (fp8 block-wise, dequantized)", file, name);
    plan.add({cn.name, cn.section, DType::kBF16, shape, origin, {}, [=](const ByteSink& sink) {
                std::vector<float> w(static_cast<size_t>(shape[0] * shape[1]));
                dequantize_fp8_blockwise(weight, scales, shape[0], shape[1], format, w);
                std::vector<uint16_t> out(w.size());
                f32_to_bf16(w.data(), out.data(), w.size());
                sink(std::as_bytes(std::span(out)));
              }});
  }
}

}  // namespace

void TensorPlan::add(PlannedTensor t) {
  auto it = tensors_.find(t.name);
  if (it != tensors_.end())
    fail(ErrorKind::kInvalidArgument, "tensor '{}' from {} clashes with the one from {}", t.name, t.origin,
         it->second.origin);
  std::string name = t.name;
  tensors_.emplace(std::move(name), std::move(t));
}

void TensorPlan::replace(PlannedTensor t) {
  auto it = tensors_.find(t.name);
  NINFER_CHECK(it != tensors_.end());
  it->second = std::move(t);
}

const PlannedTensor* TensorPlan::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void plan_hf_checkpoint(const HfCheckpoint& ck, const std::optional<Nvfp4CheckpointFormat>& nvfp4, TensorPlan& plan,
                        const std::optional<Fp8BlockwiseFormat>& fp8) {
  std::set<std::string> used;  // checkpoint names consumed as nvfp4 or fp8 parts
  if (fp8) plan_fp8_weights(ck, *fp8, plan, used);
  if (nvfp4) {
    for (const auto& [name, t] : ck.tensors) {
      auto module = nvfp4_codes_module(nvfp4->source, name);
      if (!module) continue;
      const Nvfp4PartNames parts = nvfp4_part_names(nvfp4->source, *module);
      auto scales_it = ck.tensors.find(parts.block_scales);
      if (scales_it == ck.tensors.end()) {
        if (nvfp4->source == Nvfp4Source::kModelOpt) continue;  // a plain "<m>.weight" of an excluded module
        fail(ErrorKind::kCorrupt, "{}: '{}' has no block scales '{}'", ck.dir, name, parts.block_scales);
      }
      auto scale2_it = ck.tensors.find(parts.tensor_scale);
      if (scale2_it == ck.tensors.end())
        fail(ErrorKind::kCorrupt, "{}: '{}' has no per-tensor scale '{}'", ck.dir, name, parts.tensor_scale);
      const SafetensorsTensor& codes = *t;
      const SafetensorsTensor& scales = *scales_it->second;
      if (codes.st_dtype != "U8" || codes.shape.size() != 2)
        fail(ErrorKind::kCorrupt, "{}: NVFP4 codes '{}' must be U8 [rows, cols/2], found {} [{}]", ck.dir, name,
             codes.st_dtype, fmt::join(codes.shape, ", "));
      const int64_t rows = codes.shape[0], cols = codes.shape[1] * 2;
      if (scales.st_dtype != "F8_E4M3" || scales.shape != std::vector<int64_t>{rows, cols / 16})
        fail(ErrorKind::kCorrupt, "{}: NVFP4 block scales '{}' must be F8_E4M3 [{}, {}], found {} [{}]", ck.dir,
             parts.block_scales, rows, cols / 16, scales.st_dtype, fmt::join(scales.shape, ", "));
      const float scale_2 = nvfp4_multiplier_from(nvfp4->source, scalar_f32(*scale2_it->second, ck.dir));
      float input_scale = 0.0f;
      if (auto in_it = ck.tensors.find(parts.input_scale); in_it != ck.tensors.end()) {
        input_scale = nvfp4_multiplier_from(nvfp4->source, scalar_f32(*in_it->second, ck.dir));
        used.insert(parts.input_scale);
      }
      used.insert({name, parts.block_scales, parts.tensor_scale});
      CanonicalName cn = canonical_tensor_name(*module + ".weight");
      std::string origin = fmt::format("{}: '{}' ({} NVFP4)", ck.dir, name, nvfp4_source_name(nvfp4->source));
      auto codes_span = codes.data, scales_span = scales.data;
      plan.add({cn.name, cn.section, DType::kNVFP4, {rows, cols}, origin, {},
                [=](const ByteSink& sink) {
                  const std::array<int64_t, 2> shape = {rows, cols};
                  std::vector<std::byte> out(nvfp4_layout(shape)->total_bytes);
                  assemble_nvfp4(codes_span, scales_span, scale_2, input_scale, rows, cols, out, origin);
                  sink(out);
                }});
      // Validate the parts now, before anything is written.
      check_nvfp4_parts(codes_span, scales_span, scale_2, input_scale, rows, cols, origin);
    }
  }
  for (const auto& [name, t] : ck.tensors) {
    if (used.count(name)) continue;
    if (nvfp4) {
      static constexpr std::string_view kCompanions[] = {".weight_scale", ".weight_scale_2", ".input_scale",
                                                         ".weight_global_scale", ".input_global_scale",
                                                         ".weight_zero_point", ".k_scale", ".v_scale", ".weight_packed"};
      for (auto suffix : kCompanions)
        if (ends_with(name, suffix))
          fail(ErrorKind::kUnsupported, "{}: tensor '{}' ({} [{}]) is a quantization part ninfer-pack does not import",
               ck.dir, name, t->st_dtype, fmt::join(t->shape, ", "));
    }
    plan.add(plain_tensor(*t, ck.dir));
  }
}

void plan_artifact(const Artifact& artifact, TensorPlan& plan) {
  for (const TensorInfo& t : artifact.tensors())
    plan.add({t.name, t.section, t.dtype, t.shape, fmt::format("{}: '{}'", artifact.path(), t.name), artifact.data(t), {}});
}

void plan_safetensors(const SafetensorsFile& file, TensorPlan& plan) {
  for (const auto& [name, t] : file.tensors()) plan.add(plain_tensor(t, file.path()));
}

}  // namespace ninfer
