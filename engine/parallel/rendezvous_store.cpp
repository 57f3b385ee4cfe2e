#include "engine/parallel/rendezvous_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/core/error.h"

namespace ninfer {

namespace {

// Wire format, one request at a time per connection:
//   client → server  u8 op ('S' set, 'G' get), u32 key length, key bytes, then
//                    for 'S': u64 value length, value bytes; for 'G': u64 timeout in ms
//   server → client  'S': u8 0; 'G': u8 status (0 found, 1 timed out), then when found u64 length, value bytes
constexpr uint8_t kSet = 'S', kGet = 'G';

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

template <typename T>
bool write_value(int fd, T v) { return write_all(fd, &v, sizeof v); }
template <typename T>
bool read_value(int fd, T& v) { return read_all(fd, &v, sizeof v); }

constexpr uint64_t kMaxValue = 64ull << 20;  // no rendezvous value is near this: a larger one is a corrupt stream
constexpr uint32_t kMaxKey = 4096;

double secs(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

// "…/R" (the key Gloo's full-mesh connect publishes for rank R) → R, else −1.
int rank_of_key(const std::string& key) {
  const size_t slash = key.rfind('/');
  const std::string tail = key.substr(slash == std::string::npos ? 0 : slash + 1);
  if (tail.empty() || tail.size() > 6 || !std::all_of(tail.begin(), tail.end(), ::isdigit)) return -1;
  return std::stoi(tail);
}

}  // namespace

RendezvousServer::RendezvousServer(int port) {
  listen_fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool v6 = listen_fd_ >= 0;
  if (!v6) listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) fail(ErrorKind::kIo, "rendezvous: socket(): {}", std::strerror(errno));
  const int one = 1, zero = 0;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    ::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 clients too
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  }
  if (rc != 0 || ::listen(listen_fd_, 64) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    fail(ErrorKind::kIo, "rendezvous: cannot listen on port {} (--master-port): {}", port, std::strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

RendezvousServer::~RendezvousServer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (const int fd : clients_) ::shutdown(fd, SHUT_RDWR);
  }
  cv_.notify_all();
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void RendezvousServer::accept_loop() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    std::lock_guard lock(mu_);
    if (stopping_) {
      if (fd >= 0) ::close(fd);
      return;
    }
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    clients_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

void RendezvousServer::serve(int fd) {
  for (;;) {
    uint8_t op = 0;
    uint32_t key_len = 0;
    if (!read_value(fd, op) || !read_value(fd, key_len) || key_len > kMaxKey) break;
    std::string key(key_len, '\0');
    if (!read_all(fd, key.data(), key_len)) break;
    if (op == kSet) {
      uint64_t n = 0;
      if (!read_value(fd, n) || n > kMaxValue) break;
      std::vector<char> value(static_cast<size_t>(n));
      if (!read_all(fd, value.data(), value.size())) break;
      {
        std::lock_guard lock(mu_);
        values_[key] = std::move(value);
      }
      cv_.notify_all();
      if (!write_value<uint8_t>(fd, 0)) break;
    } else if (op == kGet) {
      uint64_t timeout_ms = 0;
      if (!read_value(fd, timeout_ms)) break;
      std::vector<char> value;
      bool found;
      {
        std::unique_lock lock(mu_);
        found = cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                             [&] { return stopping_ || values_.count(key) > 0; }) && !stopping_;
        if (found) value = values_[key];
      }
      if (!write_value<uint8_t>(fd, found ? 0 : 1)) break;
      if (found && (!write_value<uint64_t>(fd, value.size()) || !write_all(fd, value.data(), value.size()))) break;
    } else {
      break;  // not a client of ours
    }
  }
  std::lock_guard lock(mu_);
  std::erase(clients_, fd);
  ::close(fd);
}

RendezvousStore::RendezvousStore(const std::string& host, int port, std::chrono::milliseconds timeout)
    : where_(host + ":" + std::to_string(port)), timeout_(timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last = "no attempt";
  for (;;) {
    addrinfo* found = nullptr;
    const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (gai != 0) {
      last = ::gai_strerror(gai);
    } else {
      for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          fd_ = fd;
        } else {
          last = std::strerror(errno);
          ::close(fd);
        }
      }
      ::freeaddrinfo(found);
    }
    if (fd_ >= 0) break;
    if (std::chrono::steady_clock::now() >= deadline)
      fail(ErrorKind::kIo,
           "rendezvous: could not reach rank 0's store at {} within {:.1f} s ({}); is the --node-rank 0 process "
           "running, and are --master-addr and --master-port the same on every node?",
           where_, secs(timeout), last);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RendezvousStore::~RendezvousStore() {
  if (fd_ >= 0) ::close(fd_);
}

void RendezvousStore::set(const std::string& key, const std::vector<char>& data) {
  std::lock_guard lock(mu_);
  uint8_t ack = 1;
  if (!write_value(fd_, kSet) || !write_value<uint32_t>(fd_, static_cast<uint32_t>(key.size())) ||
      !write_all(fd_, key.data(), key.size()) || !write_value<uint64_t>(fd_, data.size()) ||
      !write_all(fd_, data.data(), data.size()) || !read_value(fd_, ack) || ack != 0)
    fail(ErrorKind::kIo, "rendezvous: lost the store at {} while setting '{}' (rank 0's process ended?)", where_, key);
}

std::vector<char> RendezvousStore::fetch(const std::string& key, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mu_);
  uint8_t status = 2;
  if (!write_value(fd_, kGet) || !write_value<uint32_t>(fd_, static_cast<uint32_t>(key.size())) ||
      !write_all(fd_, key.data(), key.size()) || !write_value<uint64_t>(fd_, static_cast<uint64_t>(timeout.count())) ||
      !read_value(fd_, status))
    fail(ErrorKind::kIo, "rendezvous: lost the store at {} while waiting for '{}' (rank 0's process ended?)", where_, key);
  if (status != 0) {
    const int rank = rank_of_key(key);
    if (rank >= 0)
      fail(ErrorKind::kIo, "rendezvous: rank {} has not joined within {:.1f} s (start every node's process with the "
           "same --nnodes, --master-addr and --master-port, each with its own --node-rank)", rank, secs(timeout));
    fail(ErrorKind::kIo, "rendezvous: '{}' was not set within {:.1f} s", key, secs(timeout));
  }
  uint64_t n = 0;
  if (!read_value(fd_, n) || n > kMaxValue) fail(ErrorKind::kIo, "rendezvous: lost the store at {} reading '{}'", where_, key);
  std::vector<char> value(static_cast<size_t>(n));
  if (!read_all(fd_, value.data(), value.size()))
    fail(ErrorKind::kIo, "rendezvous: lost the store at {} reading '{}'", where_, key);
  return value;
}

std::vector<char> RendezvousStore::get(const std::string& key) { return fetch(key, timeout_); }

void RendezvousStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void RendezvousStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  for (const auto& key : keys) fetch(key, timeout);
}

}  // namespace ninfer
