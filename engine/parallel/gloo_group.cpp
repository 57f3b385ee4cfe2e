#include "engine/parallel/gloo_group.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstring>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "engine/parallel/collective_args.h"
#include "engine/parallel/rendezvous_store.h"

namespace ninfer {

bool gloo_built() { return true; }

std::string gloo_local_address(const std::string& master_addr) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(master_addr.c_str(), "9", &hints, &found) != 0 || found == nullptr)
    fail(ErrorKind::kInvalidArgument, "tensor parallel: cannot resolve --master-addr '{}'", master_addr);
  std::string local;
  const int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  // A UDP connect sends nothing: it only asks the kernel which local address routes to the master.
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_storage self{};
    socklen_t len = sizeof self;
    char text[INET6_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0) {
      const void* a = self.ss_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&self)->sin6_addr)
                                                 : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&self)->sin_addr);
      if (::inet_ntop(self.ss_family, a, text, sizeof text) != nullptr) local = text;
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  if (local.empty())
    fail(ErrorKind::kIo, "tensor parallel: no local address routes to --master-addr '{}'", master_addr);
  return local;
}

namespace {

class GlooRank;

}  // namespace

struct GlooGroup::State {
  std::unique_ptr<RendezvousServer> server;  // rank 0 only
  std::unique_ptr<RendezvousStore> store;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::unique_ptr<Communicator> communicator;
  uint32_t bytes_tag = 1u << 31;
};

namespace {

// Runs a Gloo call, turning its exceptions into ninfer errors that say what was lost.
template <typename F>
void gloo_call(const char* op, int rank, F&& f) {
  try {
    f();
  } catch (const gloo::IoException& e) {
    fail(ErrorKind::kIo, "tensor-parallel peer lost during {} on rank {} (a rank's process ended, hung past the "
         "timeout, or its network failed): {}", op, rank, e.what());
  } catch (const gloo::Exception& e) {
    fail(ErrorKind::kInternal, "{} on rank {}: {}", op, rank, e.what());
  }
}

class GlooRank final : public Communicator {
 public:
  explicit GlooRank(std::shared_ptr<gloo::rendezvous::Context> context) : ctx_(std::move(context)) {}
  int rank() const override { return ctx_->rank; }
  int size() const override { return ctx_->size; }

  void all_reduce_sum(const Tensor& x, Backend& backend) override {
    check_collective_arg("all_reduce_sum", "x", x);
    check_same_shapes("all_reduce_sum", shapes("all_reduce_sum", x));
    float* data = stage(x, backend);
    const size_t n = static_cast<size_t>(collective_rows(x) * x.row_size());
    gloo_call("all_reduce_sum", rank(), [&] {
      gloo::AllreduceOptions opts(ctx_);
      opts.setOutput(data, n);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(next_tag());
      gloo::allreduce(opts);
    });
    unstage(x, backend);
  }

  void all_gather(const Tensor& out, const Tensor& in, Backend& backend) override {
    check_collective_arg("all_gather", "in", in);
    check_collective_arg("all_gather", "out", out);
    const auto all = shapes("all_gather", in);
    const int64_t R = all[0][0];
    int64_t width = 0;
    std::vector<size_t> counts;
    for (const auto& [rows, n] : all) {
      if (rows != R) fail(ErrorKind::kInvalidArgument, "all_gather: ranks bring {} and {} rows", R, rows);
      width += n;
      counts.push_back(static_cast<size_t>(rows * n));
    }
    if (collective_rows(out) != R || out.row_size() != width)
      fail(ErrorKind::kInvalidArgument, "all_gather: out {} must be [{}, {}] (rows × the ranks' widths)", out.describe(), R,
           width);
    pack_rows_to_host(mine_, in, backend);
    blocks_.resize(static_cast<size_t>(R * width));
    gloo_call("all_gather", rank(), [&] {
      gloo::AllgathervOptions opts(ctx_);
      opts.setInput(mine_.data(), mine_.size());
      opts.setOutput(blocks_.data(), counts);
      opts.setTag(next_tag());
      gloo::allgatherv(opts);
    });
    // blocks_ holds rank r's [R, n_r] block after the blocks of the ranks before it: lay them out as columns.
    result_.resize(static_cast<size_t>(R * width));
    int64_t col = 0;
    const float* block = blocks_.data();
    for (const auto& [rows, n] : all) {
      for (int64_t row = 0; row < R; ++row)
        std::memcpy(result_.data() + row * width + col, block + row * n, static_cast<size_t>(n) * 4);
      block += R * n;
      col += n;
    }
    unpack_rows_from_host(out, result_.data(), backend);
  }

  void broadcast(const Tensor& x, int root, Backend& backend) override {
    if (root < 0 || root >= size())
      fail(ErrorKind::kInvalidArgument, "broadcast: root {} outside a group of {} ranks", root, size());
    check_collective_arg("broadcast", "x", x);
    check_same_shapes("broadcast", shapes("broadcast", x));
    float* data = stage(x, backend);
    const size_t n = static_cast<size_t>(collective_rows(x) * x.row_size());
    gloo_call("broadcast", rank(), [&] {
      gloo::BroadcastOptions opts(ctx_);
      opts.setOutput(data, n);
      opts.setRoot(root);
      opts.setTag(next_tag());
      gloo::broadcast(opts);
    });
    unstage(x, backend);
  }

 private:
  using Shape = std::array<int64_t, 2>;  // rows, row size

  // Every rank's [rows, row size], so that a rank bringing another shape is refused on every rank rather than
  // hanging in the collective.
  std::vector<Shape> shapes(const char* op, const Tensor& t) {
    const Shape mine{collective_rows(t), t.row_size()};
    std::vector<Shape> all(static_cast<size_t>(size()));
    gloo_call(op, rank(), [&] {
      gloo::AllgatherOptions opts(ctx_);
      opts.setInput(const_cast<int64_t*>(mine.data()), 2);
      opts.setOutput(all.front().data(), all.size() * 2);
      opts.setTag(next_tag());
      gloo::allgather(opts);
    });
    return all;
  }
  static void check_same_shapes(const char* op, const std::vector<Shape>& all) {
    for (size_t r = 1; r < all.size(); ++r)
      if (all[r] != all[0])
        fail(ErrorKind::kInvalidArgument, "{}: rank {} brings [{}, {}] but rank 0 [{}, {}]", op, r, all[r][0], all[r][1],
             all[0][0], all[0][1]);
  }

  // The tensor's rows as one contiguous host array Gloo works on in place: the tensor itself when it is packed host
  // memory, else a staging copy that unstage() writes back.
  float* stage(const Tensor& t, Backend& backend) {
    if (t.device == Device::kCpu && collective_packed(t)) return static_cast<float*>(t.data);
    pack_rows_to_host(result_, t, backend);
    return result_.data();
  }
  void unstage(const Tensor& t, Backend& backend) {
    if (t.device == Device::kCpu && collective_packed(t)) return;
    unpack_rows_from_host(t, result_.data(), backend);
  }

  uint32_t next_tag() { return tag_++; }

  std::shared_ptr<gloo::rendezvous::Context> ctx_;
  uint32_t tag_ = 1;
  std::vector<float> mine_, blocks_, result_;
};

}  // namespace

GlooGroup::GlooGroup(const GlooGroupOptions& o) : state_(std::make_unique<State>()) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size)
    fail(ErrorKind::kInvalidArgument, "tensor parallel: rank {} outside a group of {} ranks", o.rank, o.size);
  if (o.master_port < 1 || o.master_port > 65535)
    fail(ErrorKind::kInvalidArgument, "tensor parallel: --master-port {} outside 1..65535", o.master_port);
  // Gloo's TCP pairs write with writev, which raises SIGPIPE once a peer's process has ended, and SIGPIPE's default
  // action ends this process at once, before the lost peer can be reported (a test saw rank 0 die by the signal about
  // once in 25 runs of a peer that vanishes). A process in a group ignores it: such a write then fails with EPIPE,
  // which Gloo raises as an I/O error, reported as a lost peer. (The HTTP server and the rendezvous store send with
  // MSG_NOSIGNAL and do not depend on this.)
  std::signal(SIGPIPE, SIG_IGN);
  if (o.rank == 0) state_->server = std::make_unique<RendezvousServer>(o.master_port);
  state_->store = std::make_unique<RendezvousStore>(o.master_addr, o.master_port, o.join_timeout);
  const std::string local = gloo_local_address(o.master_addr);
  spdlog::info("tensor parallel: rank {}/{} joining through {}:{} (Gloo pairs on {})", o.rank, o.size, o.master_addr,
               o.master_port, local);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = local;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::PrefixStore prefixed("ninfer-tp", *state_->store);
    auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
    context->setTimeout(o.join_timeout);
    context->connectFullMesh(prefixed, device);
    context->setTimeout(o.op_timeout);
    state_->context = std::move(context);
  } catch (const gloo::Exception& e) {
    fail(ErrorKind::kIo, "tensor parallel: rank {} could not connect to its peers: {}", o.rank, e.what());
  }
  state_->communicator = std::make_unique<GlooRank>(state_->context);
  spdlog::info("tensor parallel: rank {}/{} joined", o.rank, o.size);
}

GlooGroup::~GlooGroup() = default;

Communicator& GlooGroup::communicator() { return *state_->communicator; }

void GlooGroup::barrier(std::chrono::milliseconds timeout) {
  gloo_call("barrier", rank(), [&] {
    gloo::BarrierOptions opts(state_->context);
    opts.setTag(state_->bytes_tag++);
    opts.setTimeout(timeout);
    gloo::barrier(opts);
  });
}

int GlooGroup::rank() const { return state_->context->rank; }

int GlooGroup::size() const { return state_->context->size; }

void GlooGroup::broadcast_bytes(std::vector<char>& bytes, int root, std::chrono::milliseconds timeout) {
  if (root < 0 || root >= size())
    fail(ErrorKind::kInvalidArgument, "broadcast_bytes: root {} outside a group of {} ranks", root, size());
  // Tags above 2^31 are this call's; the communicator counts its own from 1.
  uint64_t n = bytes.size();
  gloo_call("broadcast_bytes", rank(), [&] {
    gloo::BroadcastOptions opts(state_->context);
    opts.setOutput(&n, 1);
    opts.setRoot(root);
    opts.setTag(state_->bytes_tag++);
    opts.setTimeout(timeout);
    gloo::broadcast(opts);
  });
  bytes.resize(static_cast<size_t>(n));
  if (n == 0) return;
  gloo_call("broadcast_bytes", rank(), [&] {
    gloo::BroadcastOptions opts(state_->context);
    opts.setOutput(bytes.data(), bytes.size());
    opts.setRoot(root);
    opts.setTag(state_->bytes_tag++);
    opts.setTimeout(timeout);
    gloo::broadcast(opts);
  });
}

}  // namespace ninfer
