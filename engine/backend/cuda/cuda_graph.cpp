// The CUDA backend's op graphs: a step's ops recorded by stream capture into a CUDA graph, instantiated once, and
// replayed with one launch; the graph owns the staging its recorded index uploads read, and refreshes the input
// spans in it before each replay (docs/cuda-graphs.md).
#include <algorithm>
#include <memory>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/error.h"
#include "kernels/cuda_check.h"

namespace ninfer::cuda {

namespace {

// Room for the recorded uploads: twice what the busiest eager step used (the step being recorded ran eagerly before,
// so it used no more than that), and at least this much.
constexpr size_t kMinRecordingBytes = size_t{64} << 10;

class CudaOpGraph final : public OpGraph {
 public:
  CudaOpGraph(cudaStream_t stream, cudaGraph_t graph, cudaGraphExec_t exec, std::unique_ptr<HostStaging> staging)
      : stream_(stream), graph_(graph), exec_(exec), staging_(std::move(staging)) {}
  ~CudaOpGraph() override {
    (void)cudaGraphExecDestroy(exec_);
    (void)cudaGraphDestroy(graph_);
  }
  CudaOpGraph(const CudaOpGraph&) = delete;
  CudaOpGraph& operator=(const CudaOpGraph&) = delete;

  void replay() override {
    staging_->refresh();
    NINFER_CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
  }

 private:
  cudaStream_t stream_;
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  std::unique_ptr<HostStaging> staging_;
};

}  // namespace

void CudaBackend::begin_graph_capture(std::vector<std::span<const int32_t>> inputs) {
  if (!graphs_supported())
    fail(ErrorKind::kUnsupported, "cuda backend: no graph capture with sync_every_op (it synchronizes after each op)");
  if (recording_) fail(ErrorKind::kInternal, "cuda backend: a graph capture is already under way");
  auto staging = std::make_unique<HostStaging>();
  staging->prepare_recording(std::max(kMinRecordingBytes, 2 * staging_.peak_bytes()), std::move(inputs));
  // Thread-local mode: an unsafe call (a cudaMalloc, a synchronization) on this thread fails the capture instead of
  // slipping into it; the backend's own checks (alloc, workspace, synchronize) say which op did it.
  NINFER_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  recording_ = std::move(staging);
}

std::unique_ptr<OpGraph> CudaBackend::end_graph_capture() {
  if (!recording_) fail(ErrorKind::kInternal, "cuda backend: end_graph_capture() without a capture");
  std::unique_ptr<HostStaging> staging = std::move(recording_);
  cudaGraph_t graph = nullptr;
  NINFER_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  if (err != cudaSuccess) {
    (void)cudaGraphDestroy(graph);
    fail(ErrorKind::kInternal, "cuda backend: instantiating the recorded graph on device {} failed: {} ({})", device_,
         cudaGetErrorName(err), cudaGetErrorString(err));
  }
  return std::make_unique<CudaOpGraph>(stream_, graph, exec, std::move(staging));
}

void CudaBackend::abort_graph_capture() {
  if (!recording_) return;
  recording_.reset();
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(stream_, &graph);  // fails when the capture was invalidated; the stream leaves capture
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();  // capture errors are not sticky: clear the last one so the next op's check is its own
}

}  // namespace ninfer::cuda
