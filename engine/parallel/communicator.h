// Owns the collective interface tensor parallelism runs on (all_reduce sum, all_gather, broadcast), with the
// one-rank communicator (TP1: every collective is a no-op) and the in-process group of CPU ranks (threads).
#pragma once

#include <memory>
#include <vector>

#include "engine/backend/backend.h"

namespace ninfer {

// One rank's handle on a group of `size()` ranks. Every rank of the group calls the same collectives in the same
// order with tensors of the same shapes (lockstep); a collective returns on a rank once the rank's result is in
// place. Tensors are f32 [..., N] with uniform rows (contiguous, or rows at one stride), on `backend`'s device: an
// implementation that works on host memory copies device tensors through `backend` (the seam for NCCL, which takes
// device pointers and the backend's stream instead).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place: x ← Σ_r x_r, summed in rank order ((x_0 + x_1) + x_2) + …, so every rank holds the same bits and a
  // run is reproducible.
  virtual void all_reduce_sum(const Tensor& x, Backend& backend) = 0;
  // out [rows, Σ_r n_r] ← the ranks' `in` [rows, n_r] side by side, rank r's columns at offset Σ_{q<r} n_q (n_r may
  // differ between ranks: a vocabulary that does not divide). `out` must not alias `in`.
  virtual void all_gather(const Tensor& out, const Tensor& in, Backend& backend) = 0;
  // In place: x ← x of rank `root`.
  virtual void broadcast(const Tensor& x, int root, Backend& backend) = 0;
};

// TP1: rank 0 of a group of one. all_reduce and broadcast do nothing; all_gather copies `in` into `out`.
Communicator& single_rank_communicator();

// The ranks of a group whose ranks are threads of one process (each thread drives one rank): the communicator of
// each, and the abort / re-arm protocol a failed step needs. A rank that failed mid-step calls abort() so that the
// others do not wait forever in a collective (they throw Error(kInternal)); reset() re-arms the group once every rank
// is out of its collectives.
class CommunicatorGroup {
 public:
  virtual ~CommunicatorGroup() = default;
  virtual int size() const = 0;
  virtual Communicator& rank(int r) = 0;
  virtual void abort() = 0;
  virtual void reset() = 0;
};

// A group of ranks that are threads of one process, exchanging through host memory: a barrier and per-rank host
// staging buffers (device tensors are copied through their backend). CPU ranks, or device ranks sharing one GPU.
class InProcessGroup final : public CommunicatorGroup {
 public:
  explicit InProcessGroup(int size);
  ~InProcessGroup() override;
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int size() const override;
  Communicator& rank(int r) override;
  void abort() override;
  void reset() override;

  struct Shared;

 private:
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Communicator>> ranks_;
};

}  // namespace ninfer
