// Owns the check of a list of logit edits (engine/backend/logit_edit.h) on its own, for the edit_logits op and for
// the edits a step message carries from rank 0 (which a follower decodes from the network).
#pragma once

#include <cstdint>
#include <span>

#include "engine/backend/logit_edit.h"

namespace ninfer {

// Edits strictly increasing by (row, col), each row in [0, rows) and col in [0, cols); Error(kInvalidArgument) naming
// the first bad edit, `who` opening the message.
void check_logit_edits(const char* who, std::span<const LogitEdit> edits, int64_t rows, int64_t cols);

}  // namespace ninfer
