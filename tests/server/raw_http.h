// Owns the raw-socket HTTP client of the server tests: exact bytes out, responses parsed by hand, timings.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ninfer::server::testing {

// One response read off a raw connection.
struct RawResponse {
  int status = 0;  // 0: none (the connection closed or the wait ran out first)
  std::string head;
  std::string body;
  nlohmann::json json;  // the body parsed, null when it is not JSON

  std::string header(const std::string& name) const {
    std::string lower_head;
    for (char c : head) lower_head += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string key = "\r\n";
    for (char c : name) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    key += ":";
    size_t at = lower_head.find(key);
    if (at == std::string::npos) return "";
    size_t begin = at + key.size();
    size_t end = head.find("\r\n", begin);
    std::string v = head.substr(begin, end - begin);
    while (!v.empty() && v.front() == ' ') v.erase(v.begin());
    return v;
  }
  // The OpenAI error code, "<null>" when it is null, "" when there is no error object.
  std::string code() const {
    if (!json.is_object() || !json.contains("error") || !json["error"].is_object()) return "";
    const auto& c = json["error"]["code"];
    return c.is_string() ? c.get<std::string>() : "<null>";
  }
};

// A blocking TCP connection to 127.0.0.1:port that sends exact bytes and reads responses one by one.
class RawConnection {
 public:
  // `source`: the local IPv4 address to connect from (another 127.x.y.z is another client); empty: any.
  explicit RawConnection(int port, const std::string& source = "") {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (!source.empty()) {
      sockaddr_in s{};
      s.sin_family = AF_INET;
      inet_pton(AF_INET, source.c_str(), &s.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&s), sizeof(s)) != 0) return;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }

  bool send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  // Reads one response (Content-Length or chunked body); status 0 if none came within `timeout`.
  RawResponse read_response(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    RawResponse r;
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill(deadline)) return r;
    r.head = buf_.substr(0, head_end + 2);
    buf_.erase(0, head_end + 4);
    if (r.head.rfind("HTTP/1.", 0) == 0 && r.head.size() > 12) r.status = std::atoi(r.head.c_str() + 9);
    const std::string te = r.header("Transfer-Encoding");
    if (te == "chunked") {
      for (;;) {
        size_t eol;
        while ((eol = buf_.find("\r\n")) == std::string::npos)
          if (!fill(deadline)) return r;
        size_t len = std::stoul(buf_.substr(0, eol), nullptr, 16);
        while (buf_.size() < eol + 2 + len + 2)
          if (!fill(deadline)) return r;
        r.body += buf_.substr(eol + 2, len);
        buf_.erase(0, eol + 2 + len + 2);
        if (len == 0) break;
      }
    } else {
      const std::string cl = r.header("Content-Length");
      const size_t len = cl.empty() ? 0 : std::stoul(cl);
      while (buf_.size() < len)
        if (!fill(deadline)) break;
      r.body = buf_.substr(0, std::min(len, buf_.size()));
      buf_.erase(0, r.body.size());
    }
    r.json = nlohmann::json::parse(r.body, nullptr, false);
    if (r.json.is_discarded()) r.json = nullptr;
    return r;
  }

  // Whether the server closed the connection within `timeout` (reads and drops anything that arrives).
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) <= 0) continue;
      char tmp[4096];
      ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n <= 0) return true;
      buf_.append(tmp, static_cast<size_t>(n));
    }
    return false;
  }

 private:
  bool fill(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char tmp[16384];
    ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

// Sends `bytes` on a fresh connection and reads one response.
inline RawResponse raw_exchange(int port, const std::string& bytes,
                                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  RawConnection c(port);
  if (!c.connected() || !c.send(bytes)) return {};
  return c.read_response(timeout);
}

// A POST of `body` with Content-Length, to `path`.
inline std::string raw_post(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace ninfer::server::testing
