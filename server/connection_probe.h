// Owns noticing that the client of a waiting non-streaming request has closed its connection.
#pragma once

#include <optional>
#include <string>

namespace ninfer::server {

// cpp-httplib 0.11 does not expose a request's socket to its handler, so a handler that waits for the
// engine cannot see the client go away. The probe finds the socket by its address pair (the handler
// is still running, so the descriptor is open and unique), then peeks at it without consuming data:
// an orderly close (FIN) or a reset means the client is gone.
//
// POSIX only (it scans the process's descriptors); on other systems find() returns nothing and
// non-streaming requests run to their limits.
class ConnectionProbe {
 public:
  // The connected socket whose local end is local_addr:local_port and whose peer is
  // remote_addr:remote_port, if there is one.
  static std::optional<ConnectionProbe> find(const std::string& local_addr, int local_port,
                                             const std::string& remote_addr, int remote_port);

  // True once the peer closed or reset the connection. Never blocks, never consumes data.
  bool peer_closed() const;

  int fd() const { return fd_; }

 private:
  explicit ConnectionProbe(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace ninfer::server
