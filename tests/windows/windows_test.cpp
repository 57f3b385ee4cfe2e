// Windows-only behaviour, run under Wine by scripts/windows-mingw.sh (docs/windows.md): the apps given CJK and
// backslash paths on the command line, a hard link, the JSONL log at a CJK path, the console control handler
// (Ctrl-C, Ctrl-Break, console close), the connection probe on Winsock, and the Win32 memory query.
#include <gtest/gtest.h>

#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <httplib.h>

#include "engine/artifact/artifact.h"
#include "engine/artifact/mapped_file.h"
#include "engine/core/os_utf8.h"
#include "engine/runtime/memory_plan.h"
#include "server/http_server.h"
#include "server/serve_options.h"
#include "tests/server/fake_engine.h"
#include "tests/support/test_files.h"
#include "tests/windows/win_process.h"

namespace ninfer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const std::string kTiny = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
const std::string kApps = std::string(NINFER_BINARY_DIR) + "/apps/";
const char* const kCjkName = "模型-中文路径.ninfer";

// A copy of the embedded model at `dir`\`name`, returned with backslashes as a Windows user types it.
std::string copy_tiny(const fs::path& dir, const std::string& name) {
  fs::path to = dir / path_from_utf8(name);
  fs::copy_file(path_from_utf8(kTiny), to, fs::copy_options::overwrite_existing);
  return path_to_utf8(to.make_preferred());
}

// A port that was free a moment ago: bound to 0 on 127.0.0.1 and closed again.
int free_port() {
  SOCKET s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  int len = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  closesocket(s);
  return ntohs(a.sin_port);
}

// The link count Win32 reports (MinGW's std::filesystem::hard_link_count always says 1).
DWORD link_count(const std::string& utf8_path) {
  HANDLE h = CreateFileW(path_from_utf8(utf8_path).wstring().c_str(), 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                         nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) return 0;
  BY_HANDLE_FILE_INFORMATION info{};
  const DWORD n = GetFileInformationByHandle(h, &info) ? info.nNumberOfLinks : 0;
  CloseHandle(h);
  return n;
}

bool wait_health(int port, int want, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1, 0);
    auto r = c.Get("/health");
    if (r && r->status == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(WindowsPaths, BackslashPathsAreUsedAsGiven) {
  TempDir dir;
  const std::string cjk = copy_tiny(dir.path(), kCjkName);
  ASSERT_NE(cjk.find('\\'), std::string::npos) << cjk;
  Artifact a = Artifact::open(cjk, {.verify_checksums = false, .show_progress = false});
  EXPECT_EQ(a.path(), cjk);
  EXPECT_GT(a.tensors().size(), 0u);
  // A relative `models\X.ninfer`, as in the README's Windows example.
  fs::create_directory(dir.path() / "models");
  copy_tiny(dir.path() / "models", "X.ninfer");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  auto parsed = server::parse_serve_options(std::vector<std::string>{"ninfer-serve", "--model", "models\\X.ninfer"},
                                            kTiny);
  std::optional<Artifact> rel;
  std::string error;
  try {
    if (parsed.options) rel.emplace(Artifact::open(parsed.options->model, {.show_progress = false}));
  } catch (const std::exception& e) {
    error = e.what();
  }
  fs::current_path(cwd);
  ASSERT_TRUE(parsed.options) << parsed.message;
  EXPECT_EQ(parsed.options->model, "models\\X.ninfer");
  ASSERT_TRUE(rel.has_value()) << error;
  EXPECT_EQ(rel->tensors().size(), a.tensors().size());
}

// The wide command line reaches ninfer-pack as UTF-8 (Utf8Args): a CJK file name and a hard link to it.
TEST(WindowsPaths, PackInspectTakesCjkPathsAndHardLinks) {
  TempDir dir;
  const std::string cjk = copy_tiny(dir.path(), kCjkName);
  const fs::path link = dir.path() / path_from_utf8("硬链接.ninfer");
  fs::create_hard_link(path_from_utf8(cjk), link);
  ASSERT_EQ(link_count(path_to_utf8(link)), 2u);
  for (const std::string& model : {cjk, path_to_utf8(link)}) {
    const std::string log = dir.file("inspect.log");
    testing::WinChild child(kApps + "ninfer-pack.exe", {"--inspect", model, "--verify"}, log);
    ASSERT_TRUE(child.started()) << "CreateProcessW failed, Windows error " << child.start_error();
    auto code = child.wait(std::chrono::seconds(120));
    ASSERT_TRUE(code.has_value()) << "ninfer-pack --inspect did not finish";
    const std::string out = testing::read_file(log);
    EXPECT_EQ(*code, 0u) << out;
    EXPECT_NE(out.find("qwen3"), std::string::npos) << out;
  }
}

TEST(WindowsPaths, Utf8FopenWritesTheCjkNameTheWideApiSees) {
  TempDir dir;
  const std::string name = dir.file("日志-ログ.jsonl");
  std::FILE* f = fopen_utf8(name, "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("{}\n", f);
  std::fclose(f);
  const std::wstring wide = path_from_utf8(name).wstring();
  EXPECT_NE(GetFileAttributesW(wide.c_str()), INVALID_FILE_ATTRIBUTES);
  EXPECT_NE(wide.find(L"日志-ログ"), std::wstring::npos);
}

TEST(WindowsMemory, GlobalMemoryStatusExGivesTheAvailableBytes) {
  MEMORYSTATUSEX s{};
  s.dwLength = sizeof(s);
  ASSERT_TRUE(GlobalMemoryStatusEx(&s));
  const uint64_t avail = host_available_bytes();
  EXPECT_GT(avail, 64ull << 20);
  EXPECT_LE(avail, static_cast<uint64_t>(s.ullTotalPhys));
}

// The real ninfer-serve.exe at a CJK model path given with backslashes, a request, then Ctrl-Break to its process
// group: it stops with exit code 0 and the JSONL line at a CJK path is on disk.
TEST(WindowsServe, CtrlBreakStopsServeAfterTheJsonlIsWritten) {
  TempDir dir;
  const std::string model = copy_tiny(dir.path(), kCjkName);
  const std::string jsonl = path_to_utf8((dir.path() / path_from_utf8("计时.jsonl")).make_preferred());
  const std::string log = dir.file("serve.log");
  const int port = free_port();
  testing::WinChild serve(kApps + "ninfer-serve.exe",
                          {"--model", model, "--port", std::to_string(port), "--log-jsonl", jsonl, "--threads", "2",
                           "--max-context", "256"},
                          log);
  ASSERT_TRUE(serve.started()) << "CreateProcessW failed, Windows error " << serve.start_error();
  ASSERT_TRUE(wait_health(port, 200, std::chrono::seconds(90))) << testing::read_file(log);
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  auto r = c.Post("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"你好"}],"max_tokens":8,"temperature":0})",
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  if (!GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, serve.pid()))
    GTEST_SKIP() << "GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, child group) failed (Windows error " << GetLastError()
                 << "): Wine 8 does not deliver console events to another process group; "
                    "tests/windows/wine_ctrl_c_test.py stops ninfer-serve.exe with Ctrl-C (SIGINT) instead";
  auto code = serve.wait(std::chrono::seconds(30));
  const std::string out = testing::read_file(log);
  ASSERT_TRUE(code.has_value()) << "ninfer-serve did not stop on Ctrl-Break\n" << out;
  EXPECT_EQ(*code, 0u) << out;
  EXPECT_NE(out.find("stopped"), std::string::npos) << out;
  EXPECT_NE(out.find("模型-中文路径"), std::string::npos) << "the log names the model path in UTF-8\n" << out;
  auto lines = testing::read_jsonl(jsonl);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["completion_tokens"], 8) << lines[0].dump();
}

server::ServeOptions fake_options(const std::string& jsonl) {
  server::ServeOptions o;
  o.model = "unused.ninfer";
  o.port = free_port();
  o.log_jsonl = jsonl;
  o.drain_timeout_s = 30;
  return o;
}

// Ctrl-C to this process's console group reaches run_server()'s handler.
TEST(WindowsConsole, CtrlCStopsRunServer) {
  server::testing::FakeEngine engine;
  TempDir dir;
  server::ServeOptions o = fake_options(dir.file("c.jsonl"));
  int rc = -1;
  std::thread t([&] { rc = server::run_server(o, engine); });
  if (!wait_health(o.port, 200, std::chrono::seconds(10))) {
    server::request_run_server_stop();
    t.join();
    FAIL() << "run_server did not come up on port " << o.port;
  }
  if (!GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0)) {
    const DWORD e = GetLastError();
    server::request_run_server_stop();
    t.join();
    GTEST_SKIP() << "GenerateConsoleCtrlEvent(CTRL_C_EVENT) failed (Windows error " << e
                 << "): no console attached under this Wine session";
  }
  t.join();
  EXPECT_EQ(rc, 0);
}

// Closing the console: the handler stops the server without the drain (a request in flight is cancelled at once) and
// returns only after run_server() is done, inside Windows' 5 s.
TEST(WindowsConsole, ConsoleCloseCancelsAndWaitsForTheStop) {
  server::testing::FakeEngine engine;
  TempDir dir;
  const std::string jsonl = dir.file("close.jsonl");
  server::ServeOptions o = fake_options(jsonl);
  int rc = -1;
  std::thread t([&] { rc = server::run_server(o, engine); });
  if (!wait_health(o.port, 200, std::chrono::seconds(10))) {
    server::request_run_server_stop();
    t.join();
    FAIL() << "run_server did not come up on port " << o.port;
  }
  std::thread client([&] {
    httplib::Client c("127.0.0.1", o.port);
    c.set_read_timeout(30, 0);
    c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"__silent__"}],"max_tokens":16})",
           "application/json");
  });
  for (int i = 0; i < 500 && engine.active() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(engine.active(), 1);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(server::handle_console_event(CTRL_CLOSE_EVENT));
  const double handler_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The handler returned after run_server() had finished: the thread ends at once, and the line is on disk.
  t.join();
  client.join();
  EXPECT_EQ(rc, 0);
  EXPECT_LT(handler_s, 4.5);
  auto lines = testing::read_jsonl(jsonl);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stop_reason"], "cancelled") << lines[0].dump();
  EXPECT_FALSE(server::handle_console_event(12345));  // not a console event: left to the next handler
}

// The connection probe on Winsock: a client that hangs up on a waiting non-streaming request has it cancelled.
TEST(WindowsSockets, ProbeCancelsTheRequestOfAClosedConnection) {
  server::testing::FakeEngine engine;
  server::HttpServerConfig hc;
  hc.host = "127.0.0.1";
  hc.port = 0;
  server::HttpServer srv(hc, engine);
  const int port = srv.start();
  ASSERT_GT(port, 0);
  SOCKET s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  ASSERT_NE(s, INVALID_SOCKET);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<u_short>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  ASSERT_EQ(connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const std::string body = R"({"messages":[{"role":"user","content":"__silent__"}]})";
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(send(s, req.data(), static_cast<int>(req.size()), 0), static_cast<int>(req.size()));
  for (int i = 0; i < 500 && engine.active() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(engine.active(), 1);
  EXPECT_TRUE(engine.cancel_calls().empty());
  closesocket(s);
  for (int i = 0; i < 500 && engine.cancel_calls().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(engine.cancel_calls().size(), 1u) << "the hang-up was not noticed";
  srv.stop();
}

}  // namespace
}  // namespace ninfer

