// Owns the rendezvous of a multi-process tensor-parallel group: the key-value store that rank 0's process serves on
// --master-addr:--master-port (RendezvousServer) and the client through which every rank, rank 0 included, reads and
// writes it (RendezvousStore, a gloo::rendezvous::Store). Only start-up data goes through it: the addresses of the
// ranks' Gloo pairs and, for GPU ranks, the NCCL unique id. The collectives themselves are Gloo's. Every wait is
// bounded and fails with a message that says which peer is missing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace ninfer {

// Serves the store on every interface at `port` (0: a free port, see port()). Each client connection gets a thread;
// a get waits until its key is set or the client's timeout passes. Stops and joins its threads on destruction.
class RendezvousServer {
 public:
  explicit RendezvousServer(int port);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  int port() const { return port_; }

 private:
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::vector<char>> values_;
  std::vector<int> clients_;  // open connections, shut down on stop
  std::vector<std::thread> threads_;
};

// A client of the store at host:port. Connecting retries until `timeout` has passed (the server's process may start
// later), then fails: "rendezvous: could not reach rank 0's store at HOST:PORT within N s …". wait/get of a key
// that is not set within the timeout fail naming the key; a key Gloo's full-mesh connect waits on ("…/R") is named
// as "rank R has not joined".
class RendezvousStore final : public gloo::rendezvous::Store {
 public:
  RendezvousStore(const std::string& host, int port, std::chrono::milliseconds timeout);
  ~RendezvousStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  std::vector<char> fetch(const std::string& key, std::chrono::milliseconds timeout);

  std::string where_;  // "host:port", for messages
  std::chrono::milliseconds timeout_;
  std::mutex mu_;      // one request at a time on the connection
  int fd_ = -1;
};

}  // namespace ninfer
