#include "server/connection_probe.h"

#ifndef _WIN32
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#endif

namespace ninfer::server {

#ifndef _WIN32

namespace {

// "a.b.c.d" / "::1" and a port, from a socket address.
bool address_of(const sockaddr_storage& ss, std::string& addr, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    if (!inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf))) return false;
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (!inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf))) return false;
    port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  addr = buf;
  return true;
}

bool matches(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr,
             int remote_port) {
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  std::string addr;
  int port = -1;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 || !address_of(ss, addr, port)) return false;
  if (port != remote_port || addr != remote_addr) return false;
  len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 || !address_of(ss, addr, port)) return false;
  return port == local_port && addr == local_addr;
}

}  // namespace

std::optional<ConnectionProbe> ConnectionProbe::find(const std::string& local_addr, int local_port,
                                                     const std::string& remote_addr, int remote_port) {
  if (local_port <= 0 || remote_port <= 0) return std::nullopt;
  // /proc/self/fd lists exactly the open descriptors (Linux); elsewhere walk the descriptor range.
  if (DIR* dir = opendir("/proc/self/fd")) {
    std::optional<ConnectionProbe> found;
    const int dir_fd = dirfd(dir);
    while (dirent* e = readdir(dir)) {
      char* end = nullptr;
      long fd = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0' || fd == dir_fd) continue;
      if (matches(static_cast<int>(fd), local_addr, local_port, remote_addr, remote_port)) {
        found = ConnectionProbe(static_cast<int>(fd));
        break;
      }
    }
    closedir(dir);
    return found;
  }
  const long max_fd = sysconf(_SC_OPEN_MAX);
  for (int fd = 0; fd < (max_fd > 0 && max_fd < 65536 ? max_fd : 65536); ++fd)
    if (matches(fd, local_addr, local_port, remote_addr, remote_port)) return ConnectionProbe(fd);
  return std::nullopt;
}

bool ConnectionProbe::peer_closed() const {
  char c;
  ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // orderly shutdown by the peer
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset, or gone
  return false;             // data waiting (a pipelined request): still there
}

#else

std::optional<ConnectionProbe> ConnectionProbe::find(const std::string&, int, const std::string&, int) {
  return std::nullopt;
}

bool ConnectionProbe::peer_closed() const { return false; }

#endif

}  // namespace ninfer::server
