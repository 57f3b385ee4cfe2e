// Fuzz target: a .ninfer artifact's header, metadata and tensor/blob tables. open() either throws ninfer::Error or
// returns tables whose every tensor and blob lies inside the data region; verify() then only throws ninfer::Error.
#include "engine/artifact/artifact.h"
#include "engine/core/error.h"
#include "tests/fuzz/fuzz_common.h"

NINFER_FUZZ_TARGET {
  const std::string& path = ninfer::fuzz::write_scratch(data, size);
  try {
    ninfer::OpenOptions o;
    o.show_progress = false;
    const ninfer::Artifact a = ninfer::Artifact::open(path, o);
    NINFER_FUZZ_CHECK(a.data_offset() <= a.file_bytes());
    for (const ninfer::TensorInfo& t : a.tensors()) {
      NINFER_FUZZ_CHECK(a.absolute_offset(t) <= a.file_bytes() && t.bytes <= a.file_bytes() - a.absolute_offset(t),
                        t.name);
      const auto d = a.data(t);
      NINFER_FUZZ_CHECK(d.size() == t.bytes, t.name);
      if (!d.empty()) {
        volatile std::byte last = d.back();
        (void)last;
      }
      NINFER_FUZZ_CHECK(a.find(t.name) != nullptr, t.name);
    }
    for (const ninfer::BlobInfo& b : a.blobs()) {
      const auto text = a.blob(b.name);
      NINFER_FUZZ_CHECK(text.has_value() && text->size() == b.bytes, b.name);
    }
    (void)a.config();
    a.verify(false);
  } catch (const ninfer::Error&) {
  }
  return 0;
}
