// Owns the NCCL implementation of Communicator: a group of CUDA ranks that are threads of one process, one GPU per
// rank, whose collectives run on device tensors in the stream of each rank's CudaBackend (nccl_communicator.cpp,
// built with NINFER_CUDA; nccl_communicator_none.cpp says a CPU-only build has none).
#pragma once

#include <memory>
#include <vector>

#include "engine/parallel/communicator.h"

namespace ninfer {

// The ranks of an NCCL group. Rank r runs on device devices[r] (distinct devices: NCCL refuses two ranks on one GPU)
// and is driven by one thread, as NCCL advises for one process with CUDA graphs. Each collective takes the rank's
// CudaBackend on that device (anything else is refused), makes that device the calling thread's current one, and is
// enqueued on the backend's stream: it returns once the work is queued, and later work on that stream sees the result
// (synchronize the backend before reading it on the host).
//
// Differences from InProcessGroup (docs/parallel.md "NCCL communicator"):
// - all_reduce_sum is NCCL's sum (ring or tree, chosen by NCCL), NOT the rank-order sum ((x_0 + x_1) + x_2) + … of
//   the in-process group. The ranks still agree (NCCL's ring and tree reduce each element once and send the result
//   to every rank), but the order of the additions differs, so a TP run is compared with TP1 within a tolerance, not
//   bit for bit.
// - all_reduce_sum and broadcast trust lockstep: NCCL does not check that the ranks bring the same counts (a mismatch
//   hangs or corrupts). all_gather exchanges every rank's shapes on the host first (it needs the widths, which may
//   differ), so a wrong shape there is refused on every rank before any NCCL call.
// - Strided rows are staged through a contiguous device workspace of the backend ("nccl.stage").
// - Uneven all_gather: ncclAllGather needs equal counts, so each rank's block is sent with one ncclBroadcast per
//   rank inside ncclGroupStart/End (one fused launch), exact counts and no padding, into a contiguous staging buffer
//   of [rank][rows][n_rank] blocks that is then copied into the columns of `out` (with one row, the blocks already
//   are `out`'s columns: no staging).
class NcclGroup : public CommunicatorGroup {
 public:
  virtual int device(int rank) const = 0;
  // A rank that failed mid-step calls abort(): a rank waiting in all_gather's host exchange, or starting any later
  // collective, throws Error(kInternal). reset() (every rank out of its collectives) re-arms the group when every rank
  // had issued the same number of NCCL collectives, so none is left waiting on the GPU for a peer that never came;
  // otherwise the group stays broken (every collective fails, naming the counts) and must be rebuilt.
  void abort() override = 0;
  void reset() override = 0;
};

// Whether this binary was built with NCCL (NINFER_CUDA).
bool nccl_built();
// One communicator per device (ncclCommInitAll), rank r on devices[r]. Throws Error(kUnsupported) in a build without
// CUDA, Error(kInvalidArgument) for an empty list or a device listed twice, Error(kNotFound) for a device the runtime
// does not see, Error(kInternal) on an NCCL failure (the call and ncclGetErrorString named).
std::unique_ptr<NcclGroup> make_nccl_group(const std::vector<int>& devices);

}  // namespace ninfer
