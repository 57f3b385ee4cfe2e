// Owns the JSONL timing log: a background writer that appends one line per record and flushes each.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace ninfer::server {

// write() only queues the line (a short lock, no I/O), so the engine loop that finishes requests is
// never blocked by the disk. The writer thread appends and flushes each line. A line that cannot be
// written (disk full, read-only, I/O error) is counted and dropped, never retried or queued without
// bound: the server keeps serving. The first failure is logged as an error, then one line per 1000
// lost, and a recovery once lines are written again. The destructor writes what is queued, then closes.
class JsonlWriter {
 public:
  // Opens `path` for appending (creates it). Throws ninfer::Error (kIo) naming the path on failure.
  explicit JsonlWriter(const std::string& path);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;

  void write(const nlohmann::json& record);
  void write(const nlohmann::ordered_json& record);
  // Blocks until every line queued so far is written and flushed (tests, shutdown).
  void flush();

  const std::string& path() const { return path_; }
  uint64_t lines_written() const;
  uint64_t write_errors() const;

 private:
  void run();
  void enqueue(std::string line);

  std::string path_;
  std::FILE* file_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // work for the writer
  std::condition_variable idle_cv_;  // the queue drained
  std::deque<std::string> queue_;
  bool busy_ = false;
  bool stop_ = false;
  uint64_t written_ = 0;
  uint64_t errors_ = 0;
  uint64_t failing_since_ = 0;  // lines lost in the current run of failures (0: writing works)
  std::thread thread_;
};

}  // namespace ninfer::server
