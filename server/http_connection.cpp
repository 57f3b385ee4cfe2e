#include "server/http_connection.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#ifdef _WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
#else
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#endif

namespace ninfer::server {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

#ifdef _WIN32
constexpr int kSendFlags = 0;
int poll_one(socket_t s, short events, int timeout_ms) {
  WSAPOLLFD p{s, events, 0};
  int rc = WSAPoll(&p, 1, timeout_ms);
  return rc > 0 ? p.revents : rc;
}
void close_sock(socket_t s) { closesocket(s); }
void shutdown_write(socket_t s) { ::shutdown(s, SD_SEND); }
#else
constexpr int kSendFlags = MSG_NOSIGNAL;
int poll_one(socket_t s, short events, int timeout_ms) {
  pollfd p{s, events, 0};
  int rc;
  do rc = ::poll(&p, 1, timeout_ms);
  while (rc < 0 && errno == EINTR);
  return rc > 0 ? p.revents : rc;
}
void close_sock(socket_t s) { ::close(s); }
void shutdown_write(socket_t s) { ::shutdown(s, SHUT_WR); }
#endif

// The peer's numeric address ("127.0.0.1", "::1"; an IPv4-mapped IPv6 peer as its IPv4 form), or "?" when the
// socket has none.
std::string peer_address(socket_t s) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0)
    return "?";
  std::string h(host);
  if (h.rfind("::ffff:", 0) == 0 && h.find('.') != std::string::npos) h.erase(0, 7);
  return h;
}

// Waits are cut into slices so that a stopping server is noticed within one.
constexpr milliseconds kSlice{100};
constexpr size_t kRecvBuffer = 16384;
constexpr size_t kHeaderLineMax = 8192;  // httplib's CPPHTTPLIB_HEADER_MAX_LENGTH

thread_local ConnectionState* t_state = nullptr;
// How a worker handles the connection it runs (set by the pool around process_and_close_socket).
enum class Mode { kServe, kRefuse, kDrop };
thread_local Mode t_mode = Mode::kServe;

int slice_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, kSlice.count()));
}

void address_of(socket_t sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  const int rc = peer ? getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len)
                      : getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char buf[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    port = ntohs(a->sin6_port);
  }
  ip = buf;
}

const char* status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// RFC 9110 §5.6.2 tchar: what a header name is made of.
bool is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  for (char t : std::string_view("!#$%&'*+-.^_`|~"))
    if (c == static_cast<unsigned char>(t)) return true;
  return false;
}

// Strict RFC 9112 §7.1 chunked framing of a body as sent: hex size (at most 16 digits), optional extensions, CRLF,
// exactly that many bytes, CRLF; the last chunk, then CRLF (no trailers: httplib takes none). httplib 0.11 alone
// ends the body at a chunk that is not followed by CRLF and reads the rest as the next request (a desync: bytes of
// the body served as a request), and reads "-5" as a size of 2^64 - 5 (then waits for the body until the timeout).
class ChunkFraming {
 public:
  void reset() { *this = ChunkFraming{}; }
  // false when the bytes break the framing; `too_large` when a chunk is declared longer than `max` bytes.
  bool feed(const char* p, size_t n, uint64_t max, bool& too_large) {
    for (size_t i = 0; i < n; ++i) {
      const unsigned char c = static_cast<unsigned char>(p[i]);
      switch (s_) {
        case S::kSize: {
          int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
          if (v >= 0) {
            if (++digits_ > 16) return false;
            size_ = size_ * 16 + static_cast<uint64_t>(v);
            if (size_ > max) return !(too_large = true);
          } else if (digits_ == 0) {
            return false;
          } else if (c == ';' || c == ' ' || c == '\t') {
            s_ = S::kExt;
          } else if (c == '\r') {
            s_ = S::kSizeLf;
          } else {
            return false;
          }
          break;
        }
        case S::kExt:
          if (c == '\r') s_ = S::kSizeLf;
          else if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
          break;
        case S::kSizeLf:
          if (c != '\n') return false;
          s_ = size_ == 0 ? S::kLastCr : S::kData;
          left_ = size_;
          break;
        case S::kData: {
          const uint64_t m = std::min<uint64_t>(left_, n - i);
          left_ -= m;
          i += m - 1;
          if (left_ == 0) s_ = S::kDataCr;
          break;
        }
        case S::kDataCr:
          if (c != '\r') return false;
          s_ = S::kDataLf;
          break;
        case S::kDataLf:
          if (c != '\n') return false;
          s_ = S::kSize;
          size_ = 0;
          digits_ = 0;
          break;
        case S::kLastCr:
          if (c != '\r') return false;
          s_ = S::kLastLf;
          break;
        case S::kLastLf:
          if (c != '\n') return false;
          s_ = S::kDone;
          break;
        case S::kDone: return false;
      }
    }
    return true;
  }

 private:
  enum class S { kSize, kExt, kSizeLf, kData, kDataCr, kDataLf, kLastCr, kLastLf, kDone };
  S s_ = S::kSize;
  uint64_t size_ = 0, left_ = 0;
  int digits_ = 0;
};

}  // namespace

ConnectionState* current_connection() { return t_state; }

void close_after_response(httplib::Response& res) {
  res.set_header("Connection", "close");
  if (t_state) t_state->close_after = true;
}

// One connection's socket as httplib reads and writes it. Keeps its read buffer across requests (so pipelined
// requests are served), and bounds every read by the deadline of the phase it is in.
class ConnectionServer::Stream final : public httplib::Stream {
 public:
  Stream(socket_t sock, const ConnectionLimits& limits, size_t max_raw_body, const std::atomic<bool>& stopping)
      : sock_(sock), limits_(limits), max_raw_body_(max_raw_body), stopping_(stopping), buf_(kRecvBuffer) {}

  // Between requests: whether a next request starts within the keep-alive timeout.
  bool wait_for_request() {
    if (off_ < len_) return true;
    const auto deadline = Clock::now() + limits_.keep_alive_timeout;
    while (!stopping_) {
      const int ms = slice_ms(deadline);
      const int ev = poll_one(sock_, POLLIN, ms);
      if (ev < 0) return false;
      if (ev > 0) return receive() > 0;
      if (Clock::now() >= deadline) return false;
    }
    return false;
  }

  void begin_request() {
    state = ConnectionState{};
    state.sock = sock_;
    written_ = 0;
    delivered_ = 0;
    body_delivered_ = 0;
    line_ = 0;
    tail_ = 0;
    head_lines_ = 0;
    colon_ = false;
    chunks_.reset();
    head_deadline_ = Clock::now() + limits_.read_timeout;
  }

  size_t written() const { return written_; }
  size_t delivered() const { return delivered_; }
  bool eof() const { return eof_; }

  bool is_readable() const override { return off_ < len_ || poll_one(sock_, POLLIN, 0) > 0; }

  bool is_writable() const override {
    const int ev = wait_writable();
    if (ev <= 0 || (ev & (POLLERR | POLLHUP))) return false;
    // A peer that closed: readable with nothing to read (bytes of a pipelined request still count as alive).
    if (poll_one(sock_, POLLIN, 0) > 0) {
      char c;
      if (::recv(sock_, &c, 1, MSG_PEEK) == 0) return false;
    }
    return true;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (size == 0) return 0;
    if (off_ == len_) {
      const ssize_t n = fill();
      if (n <= 0) return n;
    }
    size_t k = std::min(size, len_ - off_);
    if (!state.in_body) {
      // The head is read a byte at a time by httplib; stop at its end so body bytes are counted as body.
      size_t i = 0;
      while (i < k) {
        const unsigned char c = static_cast<unsigned char>(buf_[off_ + i++]);
        tail_ = (tail_ << 8) | c;
        state.longest_line = std::max(state.longest_line, ++line_);
        if (head_lines_ > 0 && !colon_ && c != '\r' && c != '\n') {  // a header line's name, up to the colon
          if (c == ':') colon_ = true;
          if ((c == ':' && line_ == 1) || (c != ':' && !is_tchar(c))) state.bad_header_line = true;
        }
        if (c == '\n') {
          if (head_lines_ > 0 && line_ > 2 && !colon_) state.bad_header_line = true;  // not the empty line: no colon
          ++head_lines_;
          colon_ = false;
          line_ = 0;
        }
        if (delivered_ + i > limits_.max_header_bytes) {
          state.head_too_large = true;
          return -1;
        }
        if (tail_ == 0x0d0a0d0a) {
          state.in_body = true;
          body_deadline_ = Clock::now() + limits_.body_timeout;
          break;
        }
      }
      k = i;
    } else {
      body_delivered_ += k;
      if (body_delivered_ > max_raw_body_) {
        state.body_too_large = true;
        return -1;
      }
      if (state.chunked && !chunks_.feed(buf_.data() + off_, k, max_raw_body_, state.body_too_large)) {
        state.bad_chunk = true;
        return -1;
      }
    }
    std::memcpy(ptr, buf_.data() + off_, k);
    off_ += k;
    delivered_ += k;
    return static_cast<ssize_t>(k);
  }

  ssize_t write(const char* ptr, size_t size) override {
    const int ev = wait_writable();
    if (ev <= 0 || (ev & (POLLERR | POLLHUP))) return -1;
#ifdef _WIN32
    size = std::min(size, static_cast<size_t>(INT32_MAX));
    const ssize_t n = ::send(sock_, ptr, static_cast<int>(size), kSendFlags);
#else
    ssize_t n;
    do n = ::send(sock_, ptr, size, kSendFlags);
    while (n < 0 && errno == EINTR);
#endif
    if (n > 0) written_ += static_cast<size_t>(n);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(sock_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(sock_, false, ip, port); }
  socket_t socket() const override { return sock_; }

  ConnectionState state;

 private:
  int wait_writable() const {
    const auto deadline = Clock::now() + limits_.write_timeout;
    for (;;) {
      const int ev = poll_one(sock_, POLLOUT, slice_ms(deadline));
      if (ev != 0 || stopping_ || Clock::now() >= deadline) return ev;
    }
  }

  // Reads what the socket has into the (empty) buffer, waiting at most until the phase's deadline: the head's,
  // or for the body, its deadline and no stall longer than read_timeout. 0 at EOF, −1 on error or timeout.
  ssize_t fill() {
    const auto now = Clock::now();
    const auto deadline = state.in_body ? std::min(body_deadline_, now + limits_.read_timeout) : head_deadline_;
    for (;;) {
      if (stopping_) return -1;
      if (Clock::now() >= deadline) {
        state.timed_out = true;
        return -1;
      }
      const int ev = poll_one(sock_, POLLIN, slice_ms(deadline));
      if (ev < 0) return -1;
      if (ev > 0) return receive();
    }
  }

  ssize_t receive() {
    off_ = len_ = 0;
#ifdef _WIN32
    const ssize_t n = ::recv(sock_, buf_.data(), static_cast<int>(buf_.size()), 0);
#else
    ssize_t n;
    do n = ::recv(sock_, buf_.data(), buf_.size(), 0);
    while (n < 0 && errno == EINTR);
#endif
    if (n == 0) eof_ = true;
    if (n > 0) len_ = static_cast<size_t>(n);
    return n;
  }

  socket_t sock_;
  const ConnectionLimits& limits_;
  size_t max_raw_body_;
  const std::atomic<bool>& stopping_;
  std::vector<char> buf_;
  size_t off_ = 0, len_ = 0;
  bool eof_ = false;
  size_t written_ = 0, delivered_ = 0, body_delivered_ = 0, line_ = 0;
  uint32_t tail_ = 0;
  size_t head_lines_ = 0;  // lines of the head ended so far (0: in the request line)
  bool colon_ = false;     // the current header line's colon was seen
  ChunkFraming chunks_;
  Clock::time_point head_deadline_, body_deadline_;
};

// The listener's task queue: a worker per open connection, started as needed, up to the connection limit. A
// connection accepted over the limit is refused (by at most kRefusalThreads workers at once), or, when too many
// refusals are already waiting, closed at once.
class ConnectionServer::Pool final : public httplib::TaskQueue {
 public:
  static constexpr size_t kRefusalThreads = 8;
  static constexpr size_t kRefusalsWaiting = 256;

  explicit Pool(ConnectionServer& server) : server_(server) {}
  ~Pool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::lock_guard lock(mu_);
    if (server_.open_.load() < server_.limits_.max_connections) {
      ++server_.open_;
      serve_.push_back(std::move(fn));
    } else {
      refuse_.push_back({std::move(fn), refuse_.size() >= kRefusalsWaiting ? Mode::kDrop : Mode::kRefuse});
    }
    const size_t runnable = serve_.size() + (refusing_ < kRefusalThreads ? refuse_.size() : 0);
    if (runnable > idle_) threads_.emplace_back([this] { work(); });
    cv_.notify_all();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      if (shut_) return;
      shut_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      Mode mode = Mode::kServe;
      {
        std::unique_lock lock(mu_);
        ++idle_;
        cv_.wait(lock, [&] { return shut_ || !serve_.empty() || (!refuse_.empty() && refusing_ < kRefusalThreads); });
        --idle_;
        if (!serve_.empty()) {
          fn = std::move(serve_.front());
          serve_.pop_front();
        } else if (!refuse_.empty() && (refusing_ < kRefusalThreads || shut_)) {
          fn = std::move(refuse_.front().first);
          mode = shut_ ? Mode::kDrop : refuse_.front().second;
          refuse_.pop_front();
          ++refusing_;
        } else {
          return;  // shut down and drained
        }
      }
      t_mode = mode;
      fn();  // process_and_close_socket()
      t_mode = Mode::kServe;
      std::lock_guard lock(mu_);
      if (mode == Mode::kServe) --server_.open_;
      else --refusing_, cv_.notify_one();
    }
  }

  ConnectionServer& server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> serve_;
  std::deque<std::pair<std::function<void()>, Mode>> refuse_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0, refusing_ = 0;
  bool shut_ = false;
};

ConnectionServer::ConnectionServer(ConnectionLimits limits, size_t max_body_bytes, RawErrorBody raw_error,
                                   std::function<void(int)> on_raw_response)
    : limits_(limits),
      max_raw_body_bytes_(2 * max_body_bytes + (size_t{1} << 20)),
      raw_error_(std::move(raw_error)),
      on_raw_response_(std::move(on_raw_response)) {
  new_task_queue = [this] { return new Pool(*this); };
  // The Keep-Alive header httplib writes tells clients the same limits.
  set_keep_alive_timeout(std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.keep_alive_timeout).count()));
  set_keep_alive_max_count(limits_.max_requests_per_connection);
  set_payload_max_length(max_body_bytes);
}

void ConnectionServer::raise_backlog() {
  if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, 1024);
}

void ConnectionServer::shutdown() {
  stopping_ = true;
  stop();
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  if (t_mode != Mode::kServe) {
    if (t_mode == Mode::kRefuse) refuse(sock);
    else close_sock(sock);
    return true;
  }
  if (limits_.max_connections_per_client <= 0) return serve_socket(sock);
  const std::string address = peer_address(sock);
  if (!admit_client(address)) {
    refuse_client(sock, address);
    return true;
  }
  const bool ok = serve_socket(sock);
  release_client(address);
  return ok;
}

bool ConnectionServer::admit_client(const std::string& address) {
  std::lock_guard lock(clients_mu_);
  int& n = clients_[address];
  if (n >= limits_.max_connections_per_client) return false;
  ++n;
  return true;
}

void ConnectionServer::release_client(const std::string& address) {
  std::lock_guard lock(clients_mu_);
  auto it = clients_.find(address);
  if (it != clients_.end() && --it->second <= 0) clients_.erase(it);
}

bool ConnectionServer::serve_socket(socket_t sock) {
  Stream strm(sock, limits_, max_raw_body_bytes_, stopping_);
  bool ok = true;
  for (size_t left = limits_.max_requests_per_connection; left > 0 && !stopping_; --left) {
    if (!strm.wait_for_request()) break;  // idle past the keep-alive timeout, closed, or stopping
    strm.begin_request();
    t_state = &strm.state;
    bool closed = false;
    ok = process_request(strm, left == 1, closed, nullptr);
    t_state = nullptr;
    // httplib answers nothing when it could not read a request line at all: say why, then close.
    if (!ok && strm.written() == 0 && strm.delivered() > 0 && !stopping_) {
      if (strm.state.timed_out)
        write_raw(strm, 408, "request_timeout", "The request line and headers did not arrive in time.");
      else if (strm.state.head_too_large)
        write_raw(strm, 431, "request_header_too_large", "The request line and headers are too large.");
      else if (!strm.eof())
        write_raw(strm, 400, "malformed_request", "The request line could not be read.");
    }
    if (!ok || closed || strm.state.close_after) break;
  }
  lingering_close(sock);
  return ok;
}

void ConnectionServer::write_raw(Stream& strm, int status, const char* code, const char* message) {
  const std::string body = raw_error_(status, code, message);
  const std::string head = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n", status,
      status_text(status), body.size(), status == 503 ? "Retry-After: 1\r\n" : "");
  const std::string all = head + body;
  for (size_t off = 0; off < all.size();) {
    const ssize_t n = strm.write(all.data() + off, all.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  if (on_raw_response_) on_raw_response_(status);
}

void ConnectionServer::refuse(socket_t sock) {
  // Answered before the request is read (a server may answer early); lingering_close() then drains the request.
  Stream strm(sock, limits_, max_raw_body_bytes_, stopping_);
  spdlog::debug("connection refused: {} open connections (--max-connections)", open_.load());
  write_raw(strm, 503, "too_many_connections",
            fmt::format("The server has {} open connections, its limit (--max-connections); retry later.",
                        limits_.max_connections).c_str());
  lingering_close(sock);
}

void ConnectionServer::refuse_client(socket_t sock, const std::string& address) {
  Stream strm(sock, limits_, max_raw_body_bytes_, stopping_);
  spdlog::debug("connection from {} refused: {} open from it (--max-connections-per-client)", address,
                limits_.max_connections_per_client);
  write_raw(strm, 503, "too_many_connections_from_client",
            fmt::format("This client address has {} open connections, the server's limit per client "
                        "(--max-connections-per-client); close one or retry later.",
                        limits_.max_connections_per_client).c_str());
  lingering_close(sock);
}

void ConnectionServer::lingering_close(socket_t sock) {
  // Half-close, then drain what the client still sends for a moment: closing with unread bytes would reset the
  // connection and could destroy the answer before the client reads it.
  shutdown_write(sock);
  const auto deadline = Clock::now() + milliseconds(500);
  size_t drained = 0;
  char buf[4096];
  while (drained < (size_t{1} << 20) && !stopping_ && Clock::now() < deadline) {
    const int ev = poll_one(sock, POLLIN, slice_ms(deadline));
    if (ev < 0) break;
    if (ev == 0) continue;
#ifdef _WIN32
    const int n = ::recv(sock, buf, static_cast<int>(sizeof(buf)), 0);
#else
    const ssize_t n = ::recv(sock, buf, sizeof(buf), 0);
#endif
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  close_sock(sock);
}

}  // namespace ninfer::server
