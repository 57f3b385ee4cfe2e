// ninfer-fake-serve: the HTTP server over the deterministic FakeEngine, for client tests in other languages
// (tests/server/openai_client_test.py). Prints "PORT <n>" once listening; stops when stdin closes.
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "server/http_server.h"
#include "server/tool_call_parser.h"
#include "tests/server/fake_engine.h"

int main(int argc, char** argv) {
  CLI::App app{"ninfer-fake-serve: ninfer's HTTP layer over the test engine"};
  ninfer::server::HttpServerConfig config;
  config.host = "127.0.0.1";
  config.port = 0;
  std::string api_key;
  app.add_option("--port", config.port, "port (0: any free one)");
  app.add_option("--api-key", api_key, "required bearer key");
  app.add_option("--served-model-name", config.served_model_name, "served model id");
  app.add_option("--log-jsonl", config.log_jsonl_path, "JSONL timing log");
  std::string tool_call_parser = "xml";
  app.add_option("--tool-call-parser", tool_call_parser, "xml | hermes | none: the fake model's tool-call format")
      ->check(CLI::IsMember({"xml", "hermes", "none"}));
  CLI11_PARSE(app, argc, argv);
  if (!api_key.empty()) config.api_keys = {api_key};

  ninfer::server::testing::FakeEngine::Config fake;
  fake.tool_call_format = ninfer::server::resolve_tool_call_format(tool_call_parser, "");
  ninfer::server::testing::FakeEngine engine(fake);
  ninfer::server::HttpServer server(config, engine);
  try {
    std::printf("PORT %d\n", server.start());
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  server.stop();
  return 0;
}
