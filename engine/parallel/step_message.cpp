#include "engine/parallel/step_message.h"

#include <cstring>

#include "engine/core/error.h"

namespace ninfer {

namespace {

constexpr char kMagic[4] = {'N', 'T', 'P', 'S'};
constexpr char kSetupMagic[4] = {'N', 'T', 'P', 'G'};
constexpr uint16_t kVersion = 1;

class Writer {
 public:
  template <typename T>
  void put(T v) {
    const char* p = reinterpret_cast<const char*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  }
  void put_array(const std::vector<int32_t>& v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    if (v.empty()) return;
    const char* p = reinterpret_cast<const char*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(int32_t));
  }
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
  std::vector<int32_t> get_array(const char* what) {
    const uint32_t n = get<uint32_t>(what);
    need(static_cast<size_t>(n) * sizeof(int32_t), what);
    std::vector<int32_t> v(n);
    if (n > 0) std::memcpy(v.data(), bytes_.data() + at_, v.size() * sizeof(int32_t));
    at_ += v.size() * sizeof(int32_t);
    return v;
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

}  // namespace

StepMessage StepMessage::forward(const ForwardBatch& b, std::vector<StateOp> state_ops) {
  StepMessage m;
  m.kind = Kind::kForward;
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
  w.put<uint32_t>(static_cast<uint32_t>(m.state_ops.size()));
  for (const StateOp& op : m.state_ops) {
    w.put<uint8_t>(static_cast<uint8_t>(op.kind));
    w.put<int32_t>(op.dst);
    w.put<int32_t>(op.src);
  }
  if (m.kind == StepMessage::Kind::kForward) {
    w.put<int32_t>(m.max_blocks);
    for (const auto* a : {&m.tokens, &m.positions, &m.q_start, &m.seq_len, &m.state_slot, &m.block_table, &m.kv_slots,
                          &m.logit_rows, &m.checkpoint_slot})
      w.put_array(*a);
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
  if (kind < static_cast<uint8_t>(StepMessage::Kind::kForward) || kind > static_cast<uint8_t>(StepMessage::Kind::kPing))
    fail(ErrorKind::kCorrupt, "tensor-parallel step message: unknown kind {}", kind);
  m.kind = static_cast<StepMessage::Kind>(kind);
  const uint32_t ops = r.get<uint32_t>("the state op count");
  for (uint32_t i = 0; i < ops; ++i) {
    StateOp op;
    const uint8_t k = r.get<uint8_t>("a state op");
    if (k > 1) fail(ErrorKind::kCorrupt, "tensor-parallel step message: unknown state op {}", k);
    op.kind = static_cast<StateOp::Kind>(k);
    op.dst = r.get<int32_t>("a state op");
    op.src = r.get<int32_t>("a state op");
    m.state_ops.push_back(op);
  }
  if (m.kind == StepMessage::Kind::kForward) {
    m.max_blocks = r.get<int32_t>("max_blocks");
    m.tokens = r.get_array("tokens");
    m.positions = r.get_array("positions");
    m.q_start = r.get_array("q_start");
    m.seq_len = r.get_array("seq_len");
    m.state_slot = r.get_array("state_slot");
    m.block_table = r.get_array("block_table");
    m.kv_slots = r.get_array("kv_slots");
    m.logit_rows = r.get_array("logit_rows");
    m.checkpoint_slot = r.get_array("checkpoint_slot");
  }
  r.finish();
  return m;
}

}  // namespace ninfer
