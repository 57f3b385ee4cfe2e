#include "engine/backend/cpu/cpu_workspace.h"

#include <algorithm>

#include "engine/backend/cpu/bf16_linear.h"
#include "engine/backend/cpu/kernels.h"
#include "engine/backend/cpu/nvfp4_linear.h"

namespace ninfer {

CpuWorkspaceBytes cpu_workspace_bytes(const CpuWorkspaceShape& s) {
  CpuWorkspaceBytes out;
  const auto T = static_cast<uint64_t>(std::max<int64_t>(s.rows, 0));
  // One linear call's prepared rows; each kind has its own buffer, so the largest of each is held at once.
  if (s.nvfp4_max_k > 0) {
    if (s.w4a4) {
      cpu::Nvfp4A4Rows layout;  // sized for 0 rows: the layout without storage
      cpu::nvfp4_size_a4(0, s.nvfp4_max_k, layout);
      out.linear += T * static_cast<uint64_t>(layout.row_bytes);
    } else {
      out.linear += T * static_cast<uint64_t>(s.nvfp4_max_k) * sizeof(float);
    }
  }
  if (s.dense_max_k > 0) {
    const uint64_t tiles = (T + cpu::kGemmMaxRows - 1) / cpu::kGemmMaxRows;
    out.linear += tiles * static_cast<uint64_t>(cpu::gemm_pack_block(s.dense_max_k)) * sizeof(float);
    if (s.bf16_activations) {
      cpu::Bf16Rows layout;
      cpu::bf16_size_rows(0, s.dense_max_k, layout);
      out.linear += T * static_cast<uint64_t>(layout.stride) * sizeof(uint16_t) +
                    T * static_cast<uint64_t>(s.dense_max_k) * sizeof(float);
    }
  }
  // Each thread's scratch is one buffer that grows to the largest op's request.
  size_t floats = 0;
  if (s.head_dim > 0)
    floats = std::max(floats, cpu::attention_scratch_floats(s.kv_block_size, s.head_dim, cpu::kAttentionRowsPerTask,
                                                            std::max<int64_t>(s.query_group, 1)));
  if (s.gdn_dk > 0) floats = std::max(floats, cpu::chunk_scratch_floats(s.gdn_dk, s.gdn_dv));
  floats = std::max(floats, static_cast<size_t>(std::max<int64_t>(s.gdn_dv, 0)));
  floats = std::max(floats, static_cast<size_t>(2 * (s.rotary_dim / 2)));
  out.thread_scratch = static_cast<uint64_t>(std::max(s.threads, 1)) * floats * sizeof(float);
  return out;
}

}  // namespace ninfer
