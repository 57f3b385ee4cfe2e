#include "server/jsonl_log.h"

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/core/os_utf8.h"

namespace ninfer::server {

JsonlWriter::JsonlWriter(const std::string& path) : path_(path) {
  file_ = fopen_utf8(path, "ab");  // a UTF-8 path, wide on Windows
  if (!file_) fail(ErrorKind::kIo, "--log-jsonl: cannot open '{}' for appending: {}", path, std::strerror(errno));
  thread_ = std::thread([this] { run(); });
}

JsonlWriter::~JsonlWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::fclose(file_);
}

void JsonlWriter::write(const nlohmann::json& record) {
  enqueue(record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void JsonlWriter::write(const nlohmann::ordered_json& record) {
  enqueue(record.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

void JsonlWriter::enqueue(std::string line) {
  line += '\n';
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(line));
  }
  cv_.notify_one();
}

void JsonlWriter::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

uint64_t JsonlWriter::lines_written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

uint64_t JsonlWriter::write_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

void JsonlWriter::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty() && stop_) break;
    std::string line = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    errno = 0;
    bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
    const int err = errno;
    if (!ok) std::clearerr(file_);  // the next line tries again (the disk may have room by then)
    lock.lock();
    busy_ = false;
    (ok ? written_ : errors_)++;
    if (!ok && failing_since_++ % 1000 == 0)
      spdlog::error("--log-jsonl: cannot write to '{}' ({}): {} timing line(s) lost so far; serving goes on", path_,
                    err ? std::strerror(err) : "short write", errors_);
    if (ok && failing_since_ > 0) {
      spdlog::warn("--log-jsonl: writing to '{}' works again after {} lost line(s)", path_, failing_since_);
      failing_since_ = 0;
    }
    if (queue_.empty()) idle_cv_.notify_all();
  }
  idle_cv_.notify_all();
}

}  // namespace ninfer::server
