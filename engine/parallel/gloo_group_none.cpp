// A build without Gloo (NINFER_GLOO off, as on Windows): multi-process tensor parallelism is refused.
#include "engine/core/error.h"
#include "engine/parallel/gloo_group.h"

namespace ninfer {

bool gloo_built() { return false; }

std::string gloo_local_address(const std::string& master_addr) {
  fail(ErrorKind::kUnsupported, "tensor parallel: this build has no Gloo (NINFER_GLOO off), so it cannot reach '{}'",
       master_addr);
}

struct GlooGroup::State {};

GlooGroup::GlooGroup(const GlooGroupOptions&) {
  fail(ErrorKind::kUnsupported, "multi-process tensor parallelism (--nnodes) needs Gloo, and this build has none "
       "(configure with -DNINFER_GLOO=ON and libgloo-dev)");
}

GlooGroup::~GlooGroup() = default;

Communicator& GlooGroup::communicator() { fail(ErrorKind::kInternal, "GlooGroup without Gloo"); }
int GlooGroup::rank() const { return 0; }
int GlooGroup::size() const { return 1; }
void GlooGroup::barrier(std::chrono::milliseconds) { fail(ErrorKind::kInternal, "GlooGroup without Gloo"); }
void GlooGroup::broadcast_bytes(std::vector<char>&, int, std::chrono::milliseconds) {
  fail(ErrorKind::kInternal, "GlooGroup without Gloo");
}

}  // namespace ninfer
