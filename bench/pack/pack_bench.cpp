// ninfer-bench-pack: pack throughput of a synthetic ~1 GB bf16 checkpoint next to the raw file-write
// bandwidth of the same disk, and the open+validate time of the artifact (docs/benchmarks.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/common/synthetic_checkpoint.h"
#include "engine/artifact/artifact.h"
#include "engine/artifact/mapped_file.h"
#include "engine/model/model_artifact.h"
#include "engine/pack/packer.h"

#ifdef _WIN32
#include <io.h>
#else
#include <unistd.h>
#endif

namespace {

// Flushes every dirty page to disk so one measurement's write-back does not land in the next.
void sync_all() {
#ifndef _WIN32
  ::sync();
#endif
}

void fsync_file(std::FILE* f) {
#ifdef _WIN32
  _commit(_fileno(f));
#else
  fsync(fileno(f));
#endif
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Copies `src` to `dst` with 8 MiB writes and an fsync: the disk's write bandwidth for this file size.
double raw_copy_seconds(const std::string& src, const std::string& dst) {
  ninfer::MappedFile in = ninfer::MappedFile::open(src);
  double t0 = now_s();
  std::FILE* f = std::fopen(dst.c_str(), "wb");
  constexpr size_t kPiece = 8u << 20;
  for (uint64_t off = 0; off < in.size(); off += kPiece)
    std::fwrite(in.data() + off, 1, std::min<uint64_t>(kPiece, in.size() - off), f);
  std::fflush(f);
  fsync_file(f);
  std::fclose(f);
  return now_s() - t0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ninfer-bench-pack: pack throughput and artifact open time"};
  std::string dir = "/tmp/ninfer-bench-pack";
  double gib = 1.0;
  int reps = 3;
  bool keep = false;
  app.add_option("--dir", dir, "scratch directory (on the disk to measure)");
  app.add_option("--gb", gib, "checkpoint size in GB (1e9 bytes)");
  app.add_option("--reps", reps, "repetitions of each measurement (median reported)");
  app.add_flag("--keep", keep, "keep the scratch files");
  CLI11_PARSE(app, argc, argv);

  std::string hf = dir + "/hf", out = dir + "/model.ninfer", raw = dir + "/raw-copy.bin";
  auto config = ninfer::bench::synthetic_qwen35_config(static_cast<uint64_t>(gib * 1e9));
  std::fprintf(stderr, "writing the synthetic checkpoint (%d layers)...\n", config["num_hidden_layers"].get<int>());
  uint64_t bytes = ninfer::bench::write_synthetic_checkpoint(hf, config);
  std::string st = hf + "/model.safetensors";
  sync_all();  // the checkpoint's own write-back must not land inside the first measurement

  std::vector<double> raw_s, pack_s, open_s, verify_s;
  for (int r = 0; r < reps; ++r) {
    raw_s.push_back(raw_copy_seconds(st, raw));
    std::filesystem::remove(raw);
    sync_all();
    ninfer::PackReport rep = ninfer::pack_hf_checkpoint({.hf_dir = hf, .output = out, .show_progress = r == 0});
    pack_s.push_back(rep.seconds);
    sync_all();
  }
  for (int r = 0; r < std::max(reps, 5); ++r) {
    double t0 = now_s();
    ninfer::Artifact a = ninfer::Artifact::open(out);
    ninfer::load_model_config(a);
    open_s.push_back(now_s() - t0);
  }
  for (int r = 0; r < reps; ++r) {
    double t0 = now_s();
    ninfer::Artifact a = ninfer::Artifact::open(out, {.verify_checksums = true, .show_progress = false});
    verify_s.push_back(now_s() - t0);
  }
  double mb = bytes / 1e6;
  std::printf("| measurement | median of %d | throughput |\n|---|---|---|\n", reps);
  std::printf("| checkpoint | %.3f GB bf16, %d layers | |\n", bytes / 1e9, config["num_hidden_layers"].get<int>());
  std::printf("| raw copy of model.safetensors (8 MiB fwrite + fsync) | %.3f s | %.0f MB/s |\n", median(raw_s), mb / median(raw_s));
  std::printf("| ninfer-pack (parse, checksum, write, fsync, rename) | %.3f s | %.0f MB/s (%.2fx raw copy) |\n",
              median(pack_s), mb / median(pack_s), median(raw_s) / median(pack_s));
  std::printf("| open + validate, no --verify | %.4f s | |\n", median(open_s));
  std::printf("| open + --verify (XXH3 of every tensor) | %.3f s | %.0f MB/s |\n", median(verify_s), mb / median(verify_s));
  if (!keep) std::filesystem::remove_all(dir);
  return 0;
}
