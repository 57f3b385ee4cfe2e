#include "server/connection_probe.h"

#ifndef _WIN32
#include <sys/socket.h>

#include <cerrno>
#endif

#include "server/http_connection.h"

namespace ninfer::server {

#ifndef _WIN32

std::optional<ConnectionProbe> ConnectionProbe::for_current_request() {
  const ConnectionState* st = current_connection();
  if (!st || st->sock == INVALID_SOCKET) return std::nullopt;
  return ConnectionProbe(st->sock);
}

bool ConnectionProbe::peer_closed() const {
  char c;
  ssize_t n = recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // orderly shutdown by the peer
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset, or gone
  return false;             // data waiting (a pipelined request): still there
}

#else

std::optional<ConnectionProbe> ConnectionProbe::for_current_request() { return std::nullopt; }

bool ConnectionProbe::peer_closed() const { return false; }

#endif

}  // namespace ninfer::server
