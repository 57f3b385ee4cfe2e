#include "server/jsonl_log.h"

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"

namespace ninfer::server {

JsonlWriter::JsonlWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "ab");
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
    bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
    if (!ok) spdlog::warn("--log-jsonl: writing to '{}' failed: {}", path_, std::strerror(errno));
    lock.lock();
    busy_ = false;
    (ok ? written_ : errors_)++;
    if (queue_.empty()) idle_cv_.notify_all();
  }
  idle_cv_.notify_all();
}

}  // namespace ninfer::server
