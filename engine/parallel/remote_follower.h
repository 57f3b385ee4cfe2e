// Owns a follower process of a multi-process tensor-parallel group (ninfer-serve --nnodes N --node-rank R, R ≥ 1):
// it takes the group's setup from rank 0, checks that it loaded the same model, builds its rank (RankReplica), and
// runs rank 0's steps until rank 0 says stop.
#pragma once

#include <chrono>

#include "engine/artifact/artifact.h"
#include "engine/backend/backend_factory.h"
#include "engine/model/model_config.h"
#include "engine/parallel/gloo_group.h"

namespace ninfer {

// Returns when rank 0 says stop. Throws Error(kIo) when rank 0 (or another rank) is lost, Error(kInvalidArgument)
// when rank 0 serves another model than `artifact` (both named) or runs another backend. `backend` is this rank's own
// (its kind resolved, kCpu or kCuda; its threads, its device); the rows and KV blocks come from rank 0. `ready_timeout` bounds the wait for the setup.
void run_tp_follower(const Artifact& artifact, const ModelConfig& config, GlooGroup& group, BackendSelection backend,
                     std::chrono::milliseconds ready_timeout);

}  // namespace ninfer
