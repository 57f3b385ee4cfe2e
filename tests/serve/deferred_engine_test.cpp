// The not-yet-loaded engine port: 503-style refusals until attach(), then a pass-through.
#include <gtest/gtest.h>

#include "server/deferred_engine.h"

namespace ninfer::server {
namespace {

class CountingPort final : public EnginePort {
 public:
  bool ready() const override { return true; }
  ModelInfo model_info() const override {
    ModelInfo info;
    info.name = "m";
    info.max_context = 7;
    return info;
  }
  EngineLoad load() const override { return {.waiting = 3}; }
  SubmitResult submit(GenerationRequest, std::shared_ptr<GenerationSink>) override {
    SubmitResult r;
    r.handle = ++submits;
    return r;
  }
  void cancel(RequestHandle h) override { cancelled = h; }
  std::vector<int32_t> tokenize(const GenerationRequest&) const override { return {7, 8}; }
  std::string detokenize(const std::vector<int32_t>&) const override { return "seven eight"; }
  RequestHandle submits = 0, cancelled = 0;
};

TEST(DeferredEngine, RefusesUntilAttachedThenForwards) {
  DeferredEngine port;
  EXPECT_FALSE(port.ready());
  SubmitResult r = port.submit({}, nullptr);
  EXPECT_EQ(r.reject, RejectKind::kNotReady);
  EXPECT_NE(r.message.find("loading"), std::string::npos);
  port.cancel(5);  // ignored before attach
  CountingPort real;
  port.attach(&real);
  EXPECT_TRUE(port.ready());
  EXPECT_EQ(port.model_info().max_context, 7);
  EXPECT_EQ(port.load().waiting, 3);
  EXPECT_EQ(port.submit({}, nullptr).handle, 1u);
  port.cancel(9);
  EXPECT_EQ(real.cancelled, 9u);
}

}  // namespace
}  // namespace ninfer::server
