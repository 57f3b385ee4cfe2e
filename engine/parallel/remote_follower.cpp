#include "engine/parallel/remote_follower.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/model/model_weights.h"
#include "engine/parallel/rank_replica.h"
#include "engine/parallel/remote_ranks.h"
#include "engine/parallel/step_message.h"
#include "engine/speculative/drafter_registry.h"

namespace ninfer {

void run_tp_follower(const Artifact& artifact, const ModelConfig& config, GlooGroup& group, BackendSelection backend,
                     std::chrono::milliseconds ready_timeout) {
  const int rank = group.rank();
  std::vector<char> bytes;
  group.broadcast_bytes(bytes, 0, ready_timeout);
  const GroupSetup setup = decode_setup(bytes);
  const GroupSetup mine = group_setup(TpSetup{.tp = group.size()}, artifact, config);
  if (setup.tp != group.size() || setup.artifact_bytes != mine.artifact_bytes || setup.hidden_size != mine.hidden_size ||
      setup.num_layers != mine.num_layers || setup.vocab_size != mine.vocab_size)
    fail(ErrorKind::kInvalidArgument,
         "tensor parallel rank {}: rank 0 serves another model ({} bytes, hidden {}, {} layers, vocab {}, tp {}) than "
         "this node's '{}' ({} bytes, hidden {}, {} layers, vocab {}, {} ranks); give every node the same artifact",
         rank, setup.artifact_bytes, setup.hidden_size, setup.num_layers, setup.vocab_size, setup.tp, artifact.path(),
         mine.artifact_bytes, mine.hidden_size, mine.num_layers, mine.vocab_size, group.size());
  // One backend for the group: the ranks' ops would otherwise differ within each backend's tolerance, and a rank on
  // the CPU would hold a GPU rank back. `backend` is this process's resolved choice (--backend, auto resolved here).
  if (setup.backend != static_cast<uint8_t>(backend.kind))
    fail(ErrorKind::kInvalidArgument,
         "tensor parallel rank {}: rank 0 runs the {} backend but this process the {} backend; every rank of a group "
         "runs the same one (give each node the same --backend, with a GPU on each node for cuda)",
         rank, backend_kind_name(static_cast<BackendKind>(setup.backend)), backend_kind_name(backend.kind));
  backend.nvfp4_activations = static_cast<Nvfp4Activations>(setup.nvfp4_activations);
  backend.bf16_activations = setup.bf16_activations != 0;
  const TpSetup tp{.tp = setup.tp,
                   .backend = backend,
                   .kv = KvCacheConfig{.block_size = setup.kv_block_size,
                                       .num_blocks = setup.kv_blocks,
                                       .dtype = static_cast<DType>(setup.kv_dtype)},
                   .state_slots = setup.state_slots,
                   .state_checkpoints = setup.state_checkpoints,
                   .state_extra_rows = setup.state_extra_rows};
  RankReplica replica(ModelWeights::bind(artifact, config), config, rank, tp, make_backend(backend), group.communicator());
  group.barrier(ready_timeout);
  spdlog::info("tensor parallel rank {}/{}: ready, following rank 0", rank, group.size());
  std::unique_ptr<Drafter> drafter;  // this rank's share of a split drafter (kDraftBuild)
  std::vector<int32_t> drafts;
  auto need_drafter = [&](const char* call) -> Drafter& {
    if (!drafter) fail(ErrorKind::kInternal, "tensor parallel rank {}: rank 0 sent a drafter {} before building it", rank, call);
    return *drafter;
  };
  uint64_t steps = 0;
  for (;;) {
    // Rank 0 may stay idle for as long as nobody sends a request: this wait has no useful bound. Rank 0's process
    // ending closes its connections, which ends the wait at once.
    group.broadcast_bytes(bytes, 0, std::chrono::hours(24 * 365));
    const StepMessage message = decode_step(bytes);
    for (const DrafterOp& op : message.drafter_ops) {
      Drafter& d = need_drafter("sequence");
      if (op.kind == DrafterOp::Kind::kAdd) d.add_sequence(op.seq);
      else d.release(op.seq);
    }
    for (const StateOp& op : message.state_ops) replica.apply(op);
    switch (message.kind) {
      case StepMessage::Kind::kStop: break;
      case StepMessage::Kind::kPing: continue;
      case StepMessage::Kind::kForward:
        replica.forward(message.batch(), message.logits, message.edits);
        ++steps;
        continue;
      case StepMessage::Kind::kDraftBuild:
        replica.backend->bind_thread();
        drafter = make_drafter_factory(message.recipe, artifact, config)
                      .shard(*replica.weights, message.limits,
                             {.rank = rank, .size = group.size(), .comm = &group.communicator()});
        spdlog::info("tensor parallel rank {}/{}: built its share of the {} drafter", rank, group.size(),
                     message.recipe.method);
        continue;
      case StepMessage::Kind::kDraftObserve: {
        Drafter& d = need_drafter("observe");
        replica.backend->bind_thread();
        d.observe(message.draft_rows(d.features().width(config.hidden_size)));
        continue;
      }
      case StepMessage::Kind::kDraftPropose: {
        Drafter& d = need_drafter("propose");
        replica.backend->bind_thread();
        drafts.resize(message.propose_seqs.size() * static_cast<size_t>(std::max(message.propose_k, 0)));
        d.propose(message.propose_seqs, message.propose_k, drafts);
        continue;
      }
    }
    break;  // kStop
  }
  spdlog::info("tensor parallel rank {}/{}: rank 0 said stop after {} steps", rank, group.size(), steps);
}

}  // namespace ninfer
