// Owns noticing that the client of a waiting non-streaming request has closed its connection.
#pragma once

#include <optional>

#include <httplib.h>

namespace ninfer::server {

// cpp-httplib 0.11 does not hand a request's socket to its handler, so a handler that waits for the engine
// cannot see the client go away by itself. The connection layer (server/http_connection.h) records the socket
// of the request its worker thread is serving; the probe peeks at it without consuming data: an orderly close
// (FIN) or a reset means the client is gone. The worker owns the socket until the handler returns, so the
// descriptor cannot be closed or reused under the probe.
//
// POSIX: a non-blocking peek (MSG_DONTWAIT); Windows: a zero-timeout WSAPoll, then a peek.
class ConnectionProbe {
 public:
  // The probe of the request this thread is serving; nothing outside a ConnectionServer worker.
  static std::optional<ConnectionProbe> for_current_request();

  // True once the peer closed or reset the connection. Never blocks, never consumes data.
  bool peer_closed() const;

 private:
  explicit ConnectionProbe(socket_t sock) : sock_(sock) {}
  socket_t sock_;
};

}  // namespace ninfer::server
