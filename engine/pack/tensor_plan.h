// Owns the packer's list of tensors to write and where each one's bytes come from (checkpoint, artifact, extra file).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_writer.h"
#include "engine/hf/fp8_blockwise.h"
#include "engine/hf/hf_checkpoint.h"
#include "engine/hf/safetensors.h"
#include "engine/quant/nvfp4_import.h"

namespace ninfer {

struct PlannedTensor {
  std::string name;     // canonical artifact name
  std::string section;  // one of artifact_format::kSections
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::string origin;  // "<file>: '<source name>'", for messages
  // The stored bytes as they are (exactly tensor_storage_bytes(dtype, shape)); empty when `produce` makes them.
  std::span<const std::byte> bytes;
  // Set for converted tensors (imports, quantization, the draft head): streams the storage bytes.
  std::function<void(const ByteSink&)> produce;
};

// Canonical name → tensor. add() refuses a second tensor of the same name, naming both origins.
class TensorPlan {
 public:
  void add(PlannedTensor t);
  void replace(PlannedTensor t);  // same name, new content (quantization)
  const std::map<std::string, PlannedTensor>& tensors() const { return tensors_; }
  const PlannedTensor* find(const std::string& name) const;

 private:
  std::map<std::string, PlannedTensor> tensors_;
};

// Every tensor of an HF checkpoint, under its canonical name. With `nvfp4` set, each quantized linear's parts
// (nvfp4_part_names) become one nvfp4 tensor "<module>.weight" of the logical shape [rows, 2 * packed cols];
// a part without its codes, or an unknown companion tensor (k_scale, weight_zero_point, ...), is an error.
// With `fp8` set, each F8_E4M3 "<module>.weight" and its "<module>.weight_scale_inv" become one bf16 tensor
// "<module>.weight": the exact f32 dequantization (dequantize_fp8_blockwise) rounded to nearest even, which is what
// transformers' FP8 loading gives in bf16; a weight without its scale, a scale without its weight, a scale grid
// that does not match the blocks, or a NaN is an error naming the file, the tensors and the shapes.
void plan_hf_checkpoint(const HfCheckpoint& ck, const std::optional<Nvfp4CheckpointFormat>& nvfp4, TensorPlan& plan,
                        const std::optional<Fp8BlockwiseFormat>& fp8 = std::nullopt);
// Every tensor of an artifact, as stored (section and dtype kept).
void plan_artifact(const Artifact& artifact, TensorPlan& plan);
// Every tensor of one safetensors file, routed by canonical_tensor_name(); dtypes as plain artifact dtypes only.
void plan_safetensors(const SafetensorsFile& file, TensorPlan& plan);

}  // namespace ninfer
