#include "engine/parallel/step_message.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "engine/backend/backend.h"
#include "engine/backend/checks/logit_edit_checks.h"
#include "engine/core/error.h"

namespace ninfer {

namespace {

constexpr char kMagic[4] = {'N', 'T', 'P', 'S'};
constexpr char kSetupMagic[4] = {'N', 'T', 'P', 'G'};
constexpr uint16_t kVersion = 7;  // 2: drafter calls; 3: bf16_activations; 4: the setup's backend; 5: argmax; 6: top_k;
                                  // 7: logit edits

class Writer {
 public:
  template <typename T>
  void put(T v) {
    const char* p = reinterpret_cast<const char*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  }
  template <typename T>
  void put_array(const std::vector<T>& v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    if (v.empty()) return;
    const char* p = reinterpret_cast<const char*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(T));
  }
  void put_string(const std::string& s) { put_array(std::vector<char>(s.begin(), s.end())); }
  std::vector<char> out;
};

class Reader {
 public:
  explicit Reader(std::span<const char> b) : bytes_(b) {}
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  template <typename T = int32_t>
  std::vector<T> get_array(const char* what) {
    const uint32_t n = get<uint32_t>(what);
    need(static_cast<size_t>(n) * sizeof(T), what);
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), bytes_.data() + at_, v.size() * sizeof(T));
    at_ += v.size() * sizeof(T);
    return v;
  }
  std::string get_string(const char* what) {
    const std::vector<char> v = get_array<char>(what);
    return {v.begin(), v.end()};
  }
  void finish() const {
    if (at_ != bytes_.size())
      fail(ErrorKind::kCorrupt, "tensor-parallel step message: {} trailing bytes after {}", bytes_.size() - at_, at_);
  }

 private:
  void need(size_t n, const char* what) const {
    if (bytes_.size() - at_ < n)
      fail(ErrorKind::kCorrupt, "tensor-parallel step message: {} needs {} bytes at offset {}, the message has {}", what,
           n, at_, bytes_.size());
  }
  std::span<const char> bytes_;
  size_t at_ = 0;
};

std::vector<int32_t> copy(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

// A count, then each operation: its kind (0 or 1), then what `fields` reads.
template <typename Op, typename Fields>
std::vector<Op> get_ops(Reader& r, const char* what, Fields fields) {
  const uint32_t n = r.get<uint32_t>(what);
  std::vector<Op> ops;
  for (uint32_t i = 0; i < n; ++i) {
    Op op;
    const uint8_t k = r.get<uint8_t>(what);
    if (k > 1) fail(ErrorKind::kCorrupt, "tensor-parallel step message: unknown {} {}", what, k);
    op.kind = static_cast<decltype(op.kind)>(k);
    fields(op);
    ops.push_back(op);
  }
  return ops;
}

}  // namespace

StepMessage StepMessage::forward(const ForwardBatch& b, std::vector<StateOp> state_ops, LogitsForm logits,
                                 std::span<const LogitEdit> edits) {
  StepMessage m;
  m.kind = Kind::kForward;
  m.logits = logits;
  m.edits.assign(edits.begin(), edits.end());
  m.state_ops = std::move(state_ops);
  m.tokens = copy(b.tokens);
  m.positions = copy(b.positions);
  m.q_start = copy(b.q_start);
  m.seq_len = copy(b.seq_len);
  m.state_slot = copy(b.state_slot);
  m.block_table = copy(b.block_table);
  m.kv_slots = copy(b.kv_slots);
  m.logit_rows = copy(b.logit_rows);
  m.checkpoint_slot = copy(b.checkpoint_slot);
  m.max_blocks = b.max_blocks;
  return m;
}

StepMessage StepMessage::stop() { return StepMessage{}; }

StepMessage StepMessage::ping() {
  StepMessage m;
  m.kind = Kind::kPing;
  return m;
}

StepMessage StepMessage::draft_build(const DrafterRecipe& recipe, const DrafterLimits& limits) {
  StepMessage m;
  m.kind = Kind::kDraftBuild;
  m.recipe = recipe;
  m.limits = limits;
  return m;
}

StepMessage StepMessage::draft_observe(std::span<const DraftRows> rows) {
  StepMessage m;
  m.kind = Kind::kDraftObserve;
  for (const DraftRows& r : rows) {
    m.row_seq.push_back(r.seq);
    m.row_start.push_back(r.start);
    m.row_count.push_back(static_cast<int32_t>(r.next_tokens.size()));
    m.row_tokens.insert(m.row_tokens.end(), r.next_tokens.begin(), r.next_tokens.end());
    m.row_features.insert(m.row_features.end(), r.features.begin(), r.features.end());
  }
  return m;
}

StepMessage StepMessage::draft_propose(std::span<const SeqId> seqs, int32_t k) {
  StepMessage m;
  m.kind = Kind::kDraftPropose;
  m.propose_seqs.assign(seqs.begin(), seqs.end());
  m.propose_k = k;
  return m;
}

std::vector<DraftRows> StepMessage::draft_rows(int64_t feature_width) const {
  if (row_start.size() != row_seq.size() || row_count.size() != row_seq.size())
    fail(ErrorKind::kCorrupt, "tensor-parallel drafter message: {} sequences, {} starts, {} counts", row_seq.size(),
         row_start.size(), row_count.size());
  std::vector<DraftRows> rows;
  size_t token = 0;
  for (size_t i = 0; i < row_seq.size(); ++i) {
    const size_t n = static_cast<size_t>(std::max(row_count[i], 0));
    if (token + n > row_tokens.size() || (token + n) * static_cast<size_t>(feature_width) > row_features.size())
      fail(ErrorKind::kCorrupt, "tensor-parallel drafter message: rows of sequence {} run past the {} tokens and {} "
           "feature values sent", row_seq[i], row_tokens.size(), row_features.size());
    rows.push_back(DraftRows{.seq = row_seq[i],
                             .start = row_start[i],
                             .next_tokens = std::span(row_tokens).subspan(token, n),
                             .features = std::span(row_features).subspan(token * static_cast<size_t>(feature_width),
                                                                          n * static_cast<size_t>(feature_width))});
    token += n;
  }
  if (token != row_tokens.size() || token * static_cast<size_t>(feature_width) != row_features.size())
    fail(ErrorKind::kCorrupt, "tensor-parallel drafter message: {} rows of {} features, but {} tokens and {} feature "
         "values sent", token, feature_width, row_tokens.size(), row_features.size());
  return rows;
}

ForwardBatch StepMessage::batch() const {
  return ForwardBatch{.tokens = tokens,
                      .positions = positions,
                      .q_start = q_start,
                      .seq_len = seq_len,
                      .state_slot = state_slot,
                      .block_table = block_table,
                      .max_blocks = max_blocks,
                      .kv_slots = kv_slots,
                      .logit_rows = logit_rows,
                      .checkpoint_slot = checkpoint_slot};
}

std::vector<char> encode_setup(const GroupSetup& g) {
  Writer w;
  w.out.insert(w.out.end(), kSetupMagic, kSetupMagic + 4);
  w.put<uint16_t>(kVersion);
  w.put(g.tp);
  w.put(g.kv_block_size);
  w.put(g.kv_blocks);
  w.put(g.kv_dtype);
  w.put(g.state_slots);
  w.put(g.state_checkpoints);
  w.put(g.state_extra_rows);
  w.put(g.nvfp4_activations);
  w.put(g.bf16_activations);
  w.put(g.backend);
  w.put(g.artifact_bytes);
  w.put(g.hidden_size);
  w.put(g.num_layers);
  w.put(g.vocab_size);
  return std::move(w.out);
}

GroupSetup decode_setup(std::span<const char> bytes) {
  Reader r(bytes);
  char magic[4];
  for (char& c : magic) c = r.get<char>("the magic");
  if (std::memcmp(magic, kSetupMagic, 4) != 0) fail(ErrorKind::kCorrupt, "tensor-parallel setup message: not one (magic)");
  const uint16_t version = r.get<uint16_t>("the version");
  if (version != kVersion)
    fail(ErrorKind::kCorrupt, "tensor-parallel setup message: version {} (this build speaks {}); run the same "
         "ninfer-serve build on every node", version, kVersion);
  GroupSetup g;
  g.tp = r.get<int32_t>("tp");
  g.kv_block_size = r.get<int64_t>("kv_block_size");
  g.kv_blocks = r.get<int64_t>("kv_blocks");
  g.kv_dtype = r.get<uint8_t>("kv_dtype");
  g.state_slots = r.get<int64_t>("state_slots");
  g.state_checkpoints = r.get<int64_t>("state_checkpoints");
  g.state_extra_rows = r.get<int64_t>("state_extra_rows");
  g.nvfp4_activations = r.get<uint8_t>("nvfp4_activations");
  g.bf16_activations = r.get<uint8_t>("bf16_activations");
  g.backend = r.get<uint8_t>("backend");
  g.artifact_bytes = r.get<uint64_t>("artifact_bytes");
  g.hidden_size = r.get<int64_t>("hidden_size");
  g.num_layers = r.get<int64_t>("num_layers");
  g.vocab_size = r.get<int64_t>("vocab_size");
  r.finish();
  return g;
}

std::vector<char> encode_step(const StepMessage& m) {
  Writer w;
  w.out.insert(w.out.end(), kMagic, kMagic + 4);
  w.put<uint16_t>(kVersion);
  w.put<uint8_t>(static_cast<uint8_t>(m.kind));
  w.put<uint32_t>(static_cast<uint32_t>(m.drafter_ops.size()));
  for (const DrafterOp& op : m.drafter_ops) {
    w.put<uint8_t>(static_cast<uint8_t>(op.kind));
    w.put<int64_t>(op.seq);
  }
  w.put<uint32_t>(static_cast<uint32_t>(m.state_ops.size()));
  for (const StateOp& op : m.state_ops) {
    w.put<uint8_t>(static_cast<uint8_t>(op.kind));
    w.put<int32_t>(op.dst);
    w.put<int32_t>(op.src);
  }
  if (m.kind == StepMessage::Kind::kForward) {
    w.put<int32_t>(m.max_blocks);
    w.put<uint8_t>(m.logits.argmax ? 1 : 0);
    w.put<int32_t>(m.logits.top_k);
    for (const auto* a : {&m.tokens, &m.positions, &m.q_start, &m.seq_len, &m.state_slot, &m.block_table, &m.kv_slots,
                          &m.logit_rows, &m.checkpoint_slot})
      w.put_array(*a);
    w.put_array(m.edits);
  } else if (m.kind == StepMessage::Kind::kDraftBuild) {
    w.put_string(m.recipe.method);
    w.put<uint8_t>(m.recipe.lm_head_draft ? 1 : 0);
    w.put<uint8_t>(static_cast<uint8_t>(m.recipe.mtp.hidden));
    w.put<uint8_t>(static_cast<uint8_t>(m.recipe.mtp.recursion));
    w.put<int64_t>(m.recipe.mtp.kv_block_size);
    w.put<int32_t>(m.limits.max_sequences);
    w.put<int64_t>(m.limits.max_context);
    w.put<int32_t>(m.limits.draft_tokens);
  } else if (m.kind == StepMessage::Kind::kDraftObserve) {
    w.put_array(m.row_seq);
    w.put_array(m.row_start);
    w.put_array(m.row_count);
    w.put_array(m.row_tokens);
    w.put_array(m.row_features);
  } else if (m.kind == StepMessage::Kind::kDraftPropose) {
    w.put_array(m.propose_seqs);
    w.put<int32_t>(m.propose_k);
  }
  return std::move(w.out);
}

StepMessage decode_step(std::span<const char> bytes) {
  Reader r(bytes);
  char magic[4];
  for (char& c : magic) c = r.get<char>("the magic");
  if (std::memcmp(magic, kMagic, 4) != 0) fail(ErrorKind::kCorrupt, "tensor-parallel step message: not one (magic)");
  const uint16_t version = r.get<uint16_t>("the version");
  if (version != kVersion)
    fail(ErrorKind::kCorrupt, "tensor-parallel step message: version {} (this build speaks {}); run the same ninfer-serve "
         "build on every node", version, kVersion);
  StepMessage m;
  const uint8_t kind = r.get<uint8_t>("the kind");
  if (kind < static_cast<uint8_t>(StepMessage::Kind::kForward) ||
      kind > static_cast<uint8_t>(StepMessage::Kind::kDraftPropose))
    fail(ErrorKind::kCorrupt, "tensor-parallel step message: unknown kind {}", kind);
  m.kind = static_cast<StepMessage::Kind>(kind);
  m.drafter_ops = get_ops<DrafterOp>(r, "drafter op", [&](DrafterOp& op) { op.seq = r.get<int64_t>("a drafter op"); });
  m.state_ops = get_ops<StateOp>(r, "state op", [&](StateOp& op) {
    op.dst = r.get<int32_t>("a state op");
    op.src = r.get<int32_t>("a state op");
  });
  if (m.kind == StepMessage::Kind::kForward) {
    m.max_blocks = r.get<int32_t>("max_blocks");
    const uint8_t argmax = r.get<uint8_t>("the argmax flag");
    if (argmax > 1) fail(ErrorKind::kCorrupt, "tensor-parallel step message: argmax flag {}", argmax);
    m.logits.argmax = argmax != 0;
    m.logits.top_k = r.get<int32_t>("top_k");
    if (m.logits.top_k < 0 || m.logits.top_k > kTopKRowsMax || (m.logits.argmax && m.logits.top_k != 0))
      fail(ErrorKind::kCorrupt, "tensor-parallel step message: top_k {}{} (0 to {}, 0 with the argmax)",
           m.logits.top_k, m.logits.argmax ? " with the argmax" : "", kTopKRowsMax);
    m.tokens = r.get_array("tokens");
    m.positions = r.get_array("positions");
    m.q_start = r.get_array("q_start");
    m.seq_len = r.get_array("seq_len");
    m.state_slot = r.get_array("state_slot");
    m.block_table = r.get_array("block_table");
    m.kv_slots = r.get_array("kv_slots");
    m.logit_rows = r.get_array("logit_rows");
    m.checkpoint_slot = r.get_array("checkpoint_slot");
    m.edits = r.get_array<LogitEdit>("logit edits");
    if (!m.edits.empty() && !m.logits.argmax && m.logits.top_k == 0)
      fail(ErrorKind::kCorrupt, "tensor-parallel step message: {} logit edits with whole rows", m.edits.size());
    try {  // ordered, distinct, inside the step's logit rows (the columns are checked against the model's vocabulary)
      check_logit_edits("tensor-parallel step message", m.edits, static_cast<int64_t>(m.logit_rows.size()),
                        std::numeric_limits<int32_t>::max());
    } catch (const Error& e) {
      fail(ErrorKind::kCorrupt, "{}", e.what());
    }
  } else if (m.kind == StepMessage::Kind::kDraftBuild) {
    m.recipe.method = r.get_string("the drafter method");
    m.recipe.lm_head_draft = r.get<uint8_t>("lm_head_draft") != 0;
    m.recipe.mtp.lm_head_draft = m.recipe.lm_head_draft;
    const uint8_t hidden = r.get<uint8_t>("the MTP hidden"), recursion = r.get<uint8_t>("the MTP recursion");
    if (hidden > 1 || recursion > 1)
      fail(ErrorKind::kCorrupt, "tensor-parallel drafter message: unknown MTP hidden {} or recursion {}", hidden,
           recursion);
    m.recipe.mtp.hidden = static_cast<MtpHidden>(hidden);
    m.recipe.mtp.recursion = static_cast<MtpRecursion>(recursion);
    m.recipe.mtp.kv_block_size = r.get<int64_t>("the MTP KV block size");
    m.limits.max_sequences = r.get<int32_t>("max_sequences");
    m.limits.max_context = r.get<int64_t>("max_context");
    m.limits.draft_tokens = r.get<int32_t>("draft_tokens");
  } else if (m.kind == StepMessage::Kind::kDraftObserve) {
    m.row_seq = r.get_array<int64_t>("the rows' sequences");
    m.row_start = r.get_array<int64_t>("the rows' starts");
    m.row_count = r.get_array("the rows' counts");
    m.row_tokens = r.get_array("the rows' next tokens");
    m.row_features = r.get_array<float>("the rows' features");
  } else if (m.kind == StepMessage::Kind::kDraftPropose) {
    m.propose_seqs = r.get_array<int64_t>("the sequences to draft for");
    m.propose_k = r.get<int32_t>("k");
  }
  r.finish();
  return m;
}

}  // namespace ninfer
