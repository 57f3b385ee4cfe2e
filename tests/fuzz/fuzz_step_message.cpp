// Fuzz target: the bytes a follower process of a multi-node tensor-parallel group reads from rank 0 over the network
// (engine/parallel/step_message.h: the group setup and every step message). decode_step / decode_setup either throw
// ninfer::Error or return a message that encodes to bytes which decode again and encode the same (one normalization
// at most: a flag byte above 1 reads as true); an observe message's rows either come out within the arrays sent or
// throw.
#include <span>
#include <vector>

#include "engine/core/error.h"
#include "engine/parallel/step_message.h"
#include "tests/fuzz/fuzz_common.h"

NINFER_FUZZ_TARGET {
  const std::span<const char> bytes(reinterpret_cast<const char*>(data), size);
  try {
    const ninfer::StepMessage m = ninfer::decode_step(bytes);
    const std::vector<char> once = ninfer::encode_step(m);
    const std::vector<char> twice = ninfer::encode_step(ninfer::decode_step(once));
    NINFER_FUZZ_CHECK(once == twice, "a decoded step message does not encode stably");
    if (m.kind == ninfer::StepMessage::Kind::kDraftObserve)
      for (int64_t width : {0, 1, 7}) {
        try {
          size_t tokens = 0;
          for (const ninfer::DraftRows& r : m.draft_rows(width)) {
            NINFER_FUZZ_CHECK(r.features.size() == r.next_tokens.size() * static_cast<size_t>(width));
            tokens += r.next_tokens.size();
          }
          NINFER_FUZZ_CHECK(tokens == m.row_tokens.size());
        } catch (const ninfer::Error&) {
        }
      }
  } catch (const ninfer::Error&) {
  }
  try {
    const std::vector<char> once = ninfer::encode_setup(ninfer::decode_setup(bytes));
    NINFER_FUZZ_CHECK(once == ninfer::encode_setup(ninfer::decode_setup(once)), "a decoded setup does not encode stably");
  } catch (const ninfer::Error&) {
  }
  return 0;
}
