// Owns the check of a list of logit edits (check_logit_edits).
#include "engine/backend/checks/logit_edit_checks.h"

#include "engine/core/error.h"

namespace ninfer {

void check_logit_edits(const char* who, std::span<const LogitEdit> edits, int64_t rows, int64_t cols) {
  for (size_t i = 0; i < edits.size(); ++i) {
    const LogitEdit& e = edits[i];
    if (e.row < 0 || e.row >= rows || e.col < 0 || e.col >= cols)
      fail(ErrorKind::kInvalidArgument, "{}: logit edit {} at row {}, column {} is outside [{}, {}]", who, i, e.row,
           e.col, rows, cols);
    // Ordered and distinct: a device applies the edits in parallel, so two of one element would race.
    if (i > 0 && (e.row < edits[i - 1].row || (e.row == edits[i - 1].row && e.col <= edits[i - 1].col)))
      fail(ErrorKind::kInvalidArgument,
           "{}: logit edit {} (row {}, column {}) does not follow edit {} (row {}, column {}): the edits must be "
           "strictly increasing by row, then column",
           who, i, e.row, e.col, i - 1, edits[i - 1].row, edits[i - 1].col);
  }
}

}  // namespace ninfer
