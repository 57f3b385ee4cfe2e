#include "server/serve_follower.h"

#include <spdlog/spdlog.h>

#include "engine/backend/backend_factory.h"
#include "engine/parallel/remote_follower.h"

namespace ninfer::server {

GlooGroupOptions gloo_group_options(const ServeOptions& o) {
  return GlooGroupOptions{.rank = o.node_rank,
                          .size = o.nnodes,
                          .master_addr = o.master_addr,
                          .master_port = o.master_port,
                          .join_timeout = std::chrono::seconds(o.join_timeout_s)};
}

int run_follower(const ServeOptions& options, const Artifact& artifact, const ModelConfig& config, int device,
                 BackendKind backend_kind) {
  try {
    GlooGroup group(gloo_group_options(options));
    const BackendSelection backend{.kind = backend_kind, .device = device, .threads = options.threads};
    run_tp_follower(artifact, config, group, backend, std::chrono::seconds(options.join_timeout_s));
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("tensor parallel rank {}/{}: {}", options.node_rank, options.nnodes, e.what());
    return 1;
  }
}

}  // namespace ninfer::server
