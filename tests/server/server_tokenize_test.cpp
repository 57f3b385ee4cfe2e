// POST /tokenize and /detokenize over raw HTTP against the fake engine (one id per byte of the prompt's text form):
// vLLM's and llama.cpp's body shapes, the chat path, auth, and the 400s naming the field.
#include <gtest/gtest.h>

#include "tests/server/server_fixture.h"

namespace ninfer::server::testing {
namespace {

TEST_F(ServerTest, TokenizeTextAndMessagesAndDetokenize) {
  start();
  JsonResponse r = post("/tokenize", json{{"model", "m"}, {"prompt", "héllo"}});
  ASSERT_EQ(r.status, 200) << r.raw;
  std::vector<int32_t> want;
  for (unsigned char c : std::string("héllo")) want.push_back(c);
  EXPECT_EQ(r.body["tokens"].get<std::vector<int32_t>>(), want);
  EXPECT_EQ(r.body["count"], want.size());
  EXPECT_TRUE(r.body["max_model_len"].is_number_integer());
  EXPECT_EQ(post("/tokenize", json{{"content", "héllo"}}).body["tokens"], r.body["tokens"]) << "llama.cpp's field";
  // A conversation goes through the same path as chat completions (the fake renders "role:content\n").
  r = post("/tokenize", json{{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}});
  ASSERT_EQ(r.status, 200) << r.raw;
  std::vector<int32_t> chat;
  for (unsigned char c : std::string("user:hi\n")) chat.push_back(c);
  EXPECT_EQ(r.body["tokens"].get<std::vector<int32_t>>(), chat);
  r = post("/detokenize", json{{"tokens", want}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["prompt"], "héllo");
  EXPECT_EQ(r.body["content"], "héllo");
}

TEST_F(ServerTest, TokenizeErrorsNameTheField) {
  start();
  struct Case {
    json body;
    std::string path, param;
  };
  const std::vector<Case> cases = {
      {json::object(), "/tokenize", "prompt"},
      {json{{"prompt", 5}}, "/tokenize", "prompt"},
      {json{{"prompt", "x"}, {"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}, "/tokenize", "messages"},
      {json{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}, {"add_generation_prompt", "yes"}},
       "/tokenize", "add_generation_prompt"},
      {json{{"messages", "x"}}, "/tokenize", "messages"},
      {json::object(), "/detokenize", "tokens"},
      {json{{"tokens", "1 2"}}, "/detokenize", "tokens"},
      {json{{"tokens", {1, -2}}}, "/detokenize", "tokens[1]"},
      {json{{"tokens", {1, 300}}}, "/detokenize", "tokens[1]"},
  };
  for (const Case& c : cases) {
    JsonResponse r = post(c.path, c.body);
    EXPECT_EQ(r.status, 400) << c.path << " " << c.body.dump() << " " << r.raw;
    EXPECT_EQ(r.body["error"]["param"], c.param) << c.path << " " << c.body.dump() << " " << r.raw;
  }
  EXPECT_EQ(post("/tokenize", std::string("{not json")).status, 400);
  EXPECT_EQ(post("/tokenize", json{{"prompt", "x"}}).status, 200) << "the server keeps serving";
}

TEST_F(ServerTest, TokenizeNeedsTheApiKey) {
  HttpServerConfig sc;
  sc.api_keys = {"k"};
  start({}, sc);
  EXPECT_EQ(post("/tokenize", json{{"prompt", "x"}}).status, 401);
  EXPECT_EQ(post("/detokenize", json{{"tokens", {65}}}, {{"Authorization", "Bearer k"}}).status, 200);
}

}  // namespace
}  // namespace ninfer::server::testing
