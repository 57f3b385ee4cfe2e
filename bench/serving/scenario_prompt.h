// Owns turning a scenario into its prompt text: a prompt file read as is, or a long prompt generated from source files.
#pragma once

#include <string>
#include <vector>

#include "bench/serving/run_file.h"

namespace ninfer::bench {

// The files a corpus takes, in order: for each dir in the order given, every regular file under root/dir
// (recursively) whose name ends with one of the extensions, sorted by path relative to root (a file already taken
// is not taken twice). Deterministic for a given tree.
std::vector<std::string> corpus_files(const SourceCorpus& corpus);

// The corpus prompt: "// ===== FILE: <relative path> =====\n<text>\n" per file until `chars` characters (the last
// file is cut at a line end), then a blank line and the question. Throws when the files hold less than half of
// `chars`, naming the root.
std::string corpus_prompt(const SourceCorpus& corpus);

// The scenario's prompt text. Throws ninfer::Error naming the scenario and the file when it cannot be read or is empty.
std::string scenario_prompt(const Scenario& scenario);

}  // namespace ninfer::bench
