// Owns what a ninfer-serve process started with --nnodes N --node-rank R (R ≥ 1) does instead of serving HTTP: join
// the group through --master-addr:--master-port and follow rank 0's steps until rank 0 stops (docs/parallel.md).
#pragma once

#include "engine/artifact/artifact.h"
#include "engine/backend/backend_factory.h"
#include "engine/model/model_config.h"
#include "engine/parallel/gloo_group.h"
#include "server/serve_options.h"

namespace ninfer::server {

// The group options of this process's flags (--node-rank, --nnodes, --master-addr, --master-port, --join-timeout).
GlooGroupOptions gloo_group_options(const ServeOptions& options);

// Joins the group as rank --node-rank and follows rank 0. Returns the process exit code: 0 when rank 0 stopped the
// group, 1 on an error (logged: a peer lost, another model or backend on rank 0, a join that timed out). `backend` is
// this process's resolved --backend (kCpu or kCuda), `device` its GPU.
int run_follower(const ServeOptions& options, const Artifact& artifact, const ModelConfig& config, int device,
                 BackendKind backend);

}  // namespace ninfer::server
