#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "engine/artifact/artifact.h"
#include "engine/artifact/artifact_writer.h"
#include "engine/artifact/format.h"
#include "engine/core/error.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TensorEntry bytes_tensor(const std::string& name, DType dtype, std::vector<int64_t> shape, std::string bytes,
                         const std::string& section = "main") {
  auto data = std::make_shared<std::string>(std::move(bytes));
  return {name, section, dtype, std::move(shape), [data](const ByteSink& sink) {
            // Two pieces, to exercise streamed checksums.
            auto all = std::as_bytes(std::span(*data));
            size_t half = all.size() / 2;
            sink(all.first(half));
            sink(all.subspan(half));
          }};
}

std::string iota_bytes(size_t n, int start = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((start + i * 7) & 0xff);
  return s;
}

uint64_t write_sample(const std::string& path) {
  ArtifactWriter w(nlohmann::json{{"config", {{"model_type", "qwen3"}}}, {"chat_template", "{{x}}"}});
  w.add_blob("tokenizer.json", R"({"model":{}})");
  w.add_tensor(bytes_tensor("a.weight", DType::kBF16, {3, 5}, iota_bytes(30)));
  w.add_tensor(bytes_tensor("b.weight", DType::kF32, {7}, iota_bytes(28, 3), "mtp"));
  w.add_tensor(bytes_tensor("c.weight", DType::kNVFP4, {5, 48}, iota_bytes(160, 9)));
  w.add_tensor(bytes_tensor("v.weight", DType::kI8, {5000}, iota_bytes(5000, 1), "vision"));
  return w.write(path, false);
}

TEST(ArtifactRoundTrip, TensorsBlobsAndMetadataComeBackExactly) {
  TempDir dir;
  std::string path = dir.file("m.ninfer");
  uint64_t size = write_sample(path);
  Artifact a = Artifact::open(path, {.verify_checksums = true, .show_progress = false});
  EXPECT_EQ(a.file_bytes(), size);
  EXPECT_EQ(fs::file_size(dir.path() / "m.ninfer"), size);
  EXPECT_EQ(a.version(), artifact_format::kVersion);
  EXPECT_EQ(a.data_offset() % artifact_format::kAlignment, 0u);
  EXPECT_EQ(a.config()["model_type"], "qwen3");
  EXPECT_EQ(a.metadata()["chat_template"], "{{x}}");
  ASSERT_EQ(a.tensors().size(), 4u);
  const TensorInfo& t = a.require("a.weight");
  EXPECT_EQ(t.dtype, DType::kBF16);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 5}));
  auto d = a.data(t);
  ASSERT_EQ(d.size(), 30u);
  EXPECT_EQ(std::memcmp(d.data(), iota_bytes(30).data(), 30), 0);
  EXPECT_EQ(a.absolute_offset(t) % artifact_format::kAlignment, 0u);
  EXPECT_EQ(a.require("b.weight").section, "mtp");
  EXPECT_EQ(a.require("v.weight").section, "vision");
  EXPECT_EQ(a.require("c.weight").bytes, 160u);
  ASSERT_TRUE(a.blob("tokenizer.json").has_value());
  EXPECT_EQ(*a.blob("tokenizer.json"), R"({"model":{}})");
  EXPECT_FALSE(a.blob("missing").has_value());
  EXPECT_EQ(a.find("nope"), nullptr);
}

TEST(ArtifactRoundTrip, ViewsAreZeroCopyIntoTheMapping) {
  TempDir dir;
  std::string path = dir.file("m.ninfer");
  write_sample(path);
  Artifact a = Artifact::open(path);
  const TensorInfo& t = a.require("v.weight");
  auto span = a.data(t);
  // The view points into the mapped file at exactly data_offset + offset.
  EXPECT_EQ(span.data() - a.data(a.require("a.weight")).data(),
            static_cast<ptrdiff_t>(t.offset - a.require("a.weight").offset));
  std::string raw = testing::read_file(path);
  EXPECT_EQ(std::memcmp(span.data(), raw.data() + a.absolute_offset(t), span.size()), 0);
}

TEST(ArtifactRoundTrip, ResidentCopyHoldsTheSameBytesOutsideTheMapping) {
  TempDir dir;
  std::string path = dir.file("m.ninfer");
  write_sample(path);
  const std::string raw = testing::read_file(path);
  const Artifact mapped = Artifact::open(path);
  EXPECT_EQ(mapped.resident_bytes(), 0u);
  const Artifact a = Artifact::open(path, {.verify_checksums = true, .show_progress = false, .resident = true});
  uint64_t tensor_bytes = 0;
  for (const TensorInfo& t : mapped.tensors()) {
    EXPECT_TRUE(a.resident(t)) << t.name;
    auto want = mapped.data(t), got = a.data(a.require(t.name));
    ASSERT_EQ(got.size(), want.size()) << t.name;
    EXPECT_NE(got.data(), want.data()) << t.name << " still points into a mapping";
    EXPECT_EQ(std::memcmp(got.data(), raw.data() + a.absolute_offset(t), got.size()), 0) << t.name;
    tensor_bytes += t.bytes;
  }
  EXPECT_EQ(a.resident_bytes(), tensor_bytes);
  EXPECT_EQ(*a.blob("tokenizer.json"), R"({"model":{}})");  // blobs stay mapped
  // The copy keeps the file's offsets, so each tensor stays as aligned as in the file.
  for (const TensorInfo& t : a.tensors())
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data(t).data()) % artifact_format::kAlignment, 0u) << t.name;
}

TEST(ArtifactRoundTrip, ResidentSectionsAreCopiedTheOthersStayMapped) {
  TempDir dir;
  std::string path = dir.file("m.ninfer");
  write_sample(path);
  const std::string raw = testing::read_file(path);
  Artifact a = Artifact::open(path);
  const std::byte* mapped_b = a.data(a.require("b.weight")).data();
  const std::byte* mapped_v = a.data(a.require("v.weight")).data();
  constexpr std::string_view kMain[] = {"main"};
  a.make_resident(kMain, {}, false);
  EXPECT_TRUE(a.resident(a.require("a.weight")));
  EXPECT_FALSE(a.resident(a.require("b.weight")));
  EXPECT_EQ(a.resident_bytes(), 30u + 160u);  // a.weight and c.weight
  // A copy of a TensorInfo (not an entry of the artifact's own list) is found by its name.
  const TensorInfo a_copy = a.require("a.weight"), b_copy = a.require("b.weight");
  EXPECT_TRUE(a.resident(a_copy));
  EXPECT_FALSE(a.resident(b_copy));
  EXPECT_EQ(a.data(a_copy).data(), a.data(a.require("a.weight")).data());
  EXPECT_EQ(a.data(a.require("b.weight")).data(), mapped_b);
  EXPECT_EQ(a.data(a.require("v.weight")).data(), mapped_v);
  const std::byte* c = a.data(a.require("c.weight")).data();
  EXPECT_EQ(std::memcmp(c, raw.data() + a.absolute_offset(a.require("c.weight")), 160), 0);
  // Adding a section keeps the first copy where it is; repeating one changes nothing.
  constexpr std::string_view kMtp[] = {"mtp", "main", "mtp"};
  a.make_resident(kMtp, {}, false);
  EXPECT_EQ(a.data(a.require("c.weight")).data(), c);
  EXPECT_NE(a.data(a.require("b.weight")).data(), mapped_b);
  EXPECT_EQ(std::memcmp(a.data(a.require("b.weight")).data(), raw.data() + a.absolute_offset(a.require("b.weight")), 28),
            0);
  EXPECT_EQ(a.resident_bytes(), 30u + 160u + 28u);
  a.verify(false);  // the checksums hold over the copy

  // keep_mapped: a named tensor of a copied section stays in the mapping.
  Artifact k = Artifact::open(path);
  const std::byte* mapped_c = k.data(k.require("c.weight")).data();
  const std::string keep[] = {"c.weight"};
  k.make_resident({}, keep, false);
  EXPECT_EQ(k.data(k.require("c.weight")).data(), mapped_c);
  EXPECT_FALSE(k.resident(k.require("c.weight")));
  EXPECT_TRUE(k.resident(k.require("a.weight")));
  EXPECT_EQ(k.resident_bytes(), 30u + 28u + 5000u);
}

TEST(ArtifactRoundTrip, CjkPathAndHardLinkOpenTheSameArtifact) {
  TempDir dir;
  std::string cjk = dir.file("模型-中文路径.ninfer");
  write_sample(cjk);
  Artifact a = Artifact::open(cjk, {.verify_checksums = true, .show_progress = false});
  EXPECT_EQ(a.path(), cjk);
  std::string link = dir.file("硬链接.ninfer");
  fs::create_hard_link(path_from_utf8(cjk), path_from_utf8(link));
#ifndef __MINGW32__  // MinGW's libstdc++ takes st_nlink from the CRT's stat, always 1; tests/windows counts by Win32
  EXPECT_EQ(fs::hard_link_count(path_from_utf8(cjk)), 2u);
#endif
  Artifact b = Artifact::open(link, {.verify_checksums = true, .show_progress = false});
  EXPECT_EQ(b.file_bytes(), a.file_bytes());
  ASSERT_EQ(b.tensors().size(), a.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) EXPECT_EQ(b.tensors()[i].checksum, a.tensors()[i].checksum);
}

TEST(ArtifactWriter, FailedWriteLeavesNoFileAndKeepsTheOldOne) {
  TempDir dir;
  std::string path = dir.file("m.ninfer");
  testing::write_file(path, "previous artifact");
  ArtifactWriter w(nlohmann::json{{"config", nlohmann::json::object()}});
  w.add_tensor(bytes_tensor("ok", DType::kF32, {4}, iota_bytes(16)));
  w.add_tensor({"short", "main", DType::kF32, {4}, [](const ByteSink& sink) {
                  std::string eight(8, 'x');
                  sink(std::as_bytes(std::span(eight)));  // 8 of 16 bytes, then the producer gives up
                }});
  EXPECT_THROW(w.write(path, false), Error);
  EXPECT_EQ(testing::read_file(path), "previous artifact");
  for (const auto& e : fs::directory_iterator(dir.path())) EXPECT_EQ(e.path().filename(), "m.ninfer");
}

TEST(ArtifactWriter, RejectsDuplicatesUnknownSectionsAndBadShapes) {
  ArtifactWriter w(nlohmann::json{{"config", nlohmann::json::object()}});
  w.add_tensor(bytes_tensor("x", DType::kF32, {1}, iota_bytes(4)));
  EXPECT_THROW(w.add_tensor(bytes_tensor("x", DType::kF32, {1}, iota_bytes(4))), Error);
  EXPECT_THROW(w.add_tensor(bytes_tensor("y", DType::kF32, {1}, iota_bytes(4), "nowhere")), Error);
  EXPECT_THROW(w.add_tensor(bytes_tensor("z", DType::kNVFP4, {2, 10}, "")), Error);
  EXPECT_THROW(ArtifactWriter(nlohmann::json::object()), Error);
}

}  // namespace
}  // namespace ninfer
