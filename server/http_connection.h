// Owns the HTTP connection layer under cpp-httplib: one worker per connection up to a limit (503 beyond it),
// per-connection deadlines (keep-alive idle, request head, body), pipelined requests, and request-size caps.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include <httplib.h>

namespace ninfer::server {

struct ConnectionLimits {
  int max_connections = 512;                          // open connections; more are answered 503 and closed
  int max_connections_per_client = 0;                 // open connections from one peer address (0: no limit)
  std::chrono::milliseconds keep_alive_timeout{5000}; // an idle connection is closed after this
  std::chrono::milliseconds read_timeout{10000};      // the request line and headers within this; no body stall longer
  std::chrono::milliseconds body_timeout{60000};      // the whole body within this
  std::chrono::milliseconds write_timeout{5000};      // a client that reads nothing for this long is dropped
  size_t max_header_bytes = size_t{64} << 10;         // request line + headers; larger get 431
  size_t max_requests_per_connection = 1000;
};

// What the stream of the request being served saw (worker thread). The error handler reads it to tell why the
// library failed a request; handlers set close_after.
struct ConnectionState {
  socket_t sock = INVALID_SOCKET;  // the connection's socket, open while its requests are served (ConnectionProbe)
  bool in_body = false;          // the head (request line + headers) was read
  bool head_too_large = false;   // over max_header_bytes
  size_t longest_line = 0;       // of the head, terminator included
  bool body_too_large = false;   // the body as sent went over 2 × max_body_bytes + 1 MiB
  bool timed_out = false;        // a deadline passed while reading
  bool close_after = false;      // close the connection after this response
  bool bad_header_line = false;  // a header line that is not `token ":" value` (no colon, whitespace before it,
                                 // obs-fold): the request is refused (400), never guessed at
  bool chunked = false;          // set before the body is read: the stream checks its chunked framing strictly
  bool bad_chunk = false;        // the chunked framing as sent was broken (the reader fails: 400 invalid_body)
};

// The state of the request this thread serves; null outside one (e.g. in a test's own thread).
ConnectionState* current_connection();

// Makes this response the connection's last ("Connection: close"): for answers sent before the body was read,
// or after reading it failed, when the rest of the connection's bytes cannot be trusted.
void close_after_response(httplib::Response& res);

// httplib::Server with its own connection loop (process_and_close_socket) and task queue.
class ConnectionServer : public httplib::Server {
 public:
  // `raw_error(status, code, message)` builds the JSON body of answers the connection layer writes itself
  // (503 connection limit, 408 / 431 before a request line could be parsed); `on_raw_response(status)` is told.
  using RawErrorBody = std::function<std::string(int status, const char* code, const char* message)>;
  // `max_body_bytes` bounds the decoded body (the handlers check it); the body as sent may be at most
  // 2 × max_body_bytes + 1 MiB (chunk framing), which the stream checks.
  ConnectionServer(ConnectionLimits limits, size_t max_body_bytes, RawErrorBody raw_error,
                   std::function<void(int)> on_raw_response);

  // httplib 0.11 listens with a backlog of 5; listening again on the bound socket raises it (POSIX allows it;
  // Winsock keeps the first value).
  void raise_backlog();
  // Wakes every connection that waits for a request, then stops listening and joins the workers.
  void shutdown();
  // Connections accepted and not yet closed (refused ones not counted).
  int open_connections() const { return open_.load(); }

  const ConnectionLimits& limits() const { return limits_; }

 private:
  class Pool;
  class Stream;
  bool process_and_close_socket(socket_t sock) override;
  bool serve_socket(socket_t sock);
  void refuse(socket_t sock);
  void refuse_client(socket_t sock, const std::string& address);
  // Counts a connection against its peer address; false (nothing counted) when the address is at its limit.
  bool admit_client(const std::string& address);
  void release_client(const std::string& address);
  void write_raw(Stream& strm, int status, const char* code, const char* message);
  void lingering_close(socket_t sock);

  ConnectionLimits limits_;
  size_t max_raw_body_bytes_;
  RawErrorBody raw_error_;
  std::function<void(int)> on_raw_response_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> open_{0};
  std::mutex clients_mu_;
  std::map<std::string, int> clients_;  // peer address → open connections (with a per-client limit only)
};

}  // namespace ninfer::server
