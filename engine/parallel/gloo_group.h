// Owns a multi-process tensor-parallel group of CPU ranks over Gloo (the collective library Debian ships as
// libgloo-dev): joining it through the rendezvous store that rank 0 serves, and the Communicator whose collectives
// are Gloo's over TCP between the ranks' processes (gloo_group.cpp; gloo_group_none.cpp in a build without Gloo).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/parallel/communicator.h"

namespace ninfer {

struct GlooGroupOptions {
  int rank = 0;
  int size = 1;
  std::string master_addr = "127.0.0.1";  // where rank 0's process serves the rendezvous store
  int master_port = 29500;
  // Start-up: reaching the store and then every peer, each bounded by this.
  std::chrono::milliseconds join_timeout{std::chrono::seconds(60)};
  // A collective that waits longer than this for a peer fails. A peer whose process ends is noticed at once (its
  // connections close); this bounds a peer that hangs.
  std::chrono::milliseconds op_timeout{std::chrono::seconds(300)};
};

// The local address Gloo's pairs of this rank listen on: the one this host routes to `master_addr` from (so every
// peer that reaches the master reaches this rank too); "127.0.0.1" stays loopback.
std::string gloo_local_address(const std::string& master_addr);

// One rank's membership. Rank 0 serves the store for the group's lifetime (construct rank 0 first or within the other
// ranks' join timeout). Construction blocks until every rank has joined, or fails with Error(kIo) naming what is
// missing: "could not reach rank 0's store at HOST:PORT …" or "rank R has not joined within N s".
//
// Collectives follow Communicator's contract (lockstep, f32 rows at one stride, device tensors staged through the
// backend) with two differences from InProcessGroup: all_reduce_sum is Gloo's ring sum, so every rank holds the same
// bits but the order of the additions is not the rank order (TP is compared with TP1 within a tolerance), and a
// failure is per process: a peer that died or timed out makes the collective throw Error(kIo) "tensor-parallel peer
// lost …" on the ranks that wait for it, after which the group is broken (there is no abort/reset across processes).
// Joining a group makes the process ignore SIGPIPE (Gloo's writes to a dead peer would otherwise end it silently).
class GlooGroup {
 public:
  explicit GlooGroup(const GlooGroupOptions& options);
  ~GlooGroup();
  GlooGroup(const GlooGroup&) = delete;
  GlooGroup& operator=(const GlooGroup&) = delete;

  Communicator& communicator();
  int rank() const;
  int size() const;
  // In place: `bytes` ← rank `root`'s bytes (the other ranks' size need not match). Waits at most `timeout` for the
  // root (a follower waiting for rank 0's next step passes a long one); a lost peer throws Error(kIo) as the
  // collectives do.
  void broadcast_bytes(std::vector<char>& bytes, int root, std::chrono::milliseconds timeout);
  // Returns once every rank has called it; Error(kIo) after `timeout` or when a peer is lost.
  void barrier(std::chrono::milliseconds timeout);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// Whether this build has Gloo (a build without it refuses GlooGroup with Error(kUnsupported)).
bool gloo_built();

}  // namespace ninfer
