#include "server/connection_probe.h"

#ifdef _WIN32
#include <winsock2.h>
#else
#include <sys/socket.h>

#include <cerrno>
#endif

#include "server/http_connection.h"

namespace ninfer::server {

std::optional<ConnectionProbe> ConnectionProbe::for_current_request() {
  const ConnectionState* st = current_connection();
  if (!st || st->sock == INVALID_SOCKET) return std::nullopt;
  return ConnectionProbe(st->sock);
}

#ifdef _WIN32

// Winsock has no MSG_DONTWAIT: a zero-timeout WSAPoll says whether a peek can answer without blocking (data, FIN,
// or an error), and only then the peek reads what it is.
bool ConnectionProbe::peer_closed() const {
  WSAPOLLFD p{sock_, POLLRDNORM, 0};
  const int rc = WSAPoll(&p, 1, 0);
  if (rc < 0) return WSAGetLastError() == WSAENOTSOCK;  // the socket itself is gone
  if (rc == 0) return false;                             // nothing to read: the client is waiting
  if (p.revents & (POLLERR | POLLNVAL)) return true;
  char c;
  const int n = recv(sock_, &c, 1, MSG_PEEK);
  if (n == 0) return true;  // orderly shutdown by the peer
  if (n < 0) {
    const int e = WSAGetLastError();
    return e != WSAEWOULDBLOCK && e != WSAEINTR;  // reset, or gone
  }
  return false;  // data waiting (a pipelined request): still there
}

#else

bool ConnectionProbe::peer_closed() const {
  char c;
  ssize_t n = recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // orderly shutdown by the peer
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset, or gone
  return false;             // data waiting (a pipelined request): still there
}

#endif

}  // namespace ninfer::server
