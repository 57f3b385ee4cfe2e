// HTTP integration tests of connections: pipelining, idle and slow clients, the connection limit (raw sockets).
#include <memory>

#include <fmt/format.h>

#include "tests/server/raw_http.h"
#include "tests/server/server_fixture.h"

namespace ninfer::server::testing {
namespace {

using std::chrono::milliseconds;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Issue 16 #7: pipelined requests in one write got one answer, then a close 5 s later.
TEST_F(ServerTest, PipelinedRequestsAreAllAnswered) {
  start();
  RawConnection c(port_);
  ASSERT_TRUE(c.connected());
  const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string chat = raw_post("/v1/chat/completions", chat_body("pipelined").dump());
  ASSERT_TRUE(c.send(health + health + chat + "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n" + health));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    RawResponse r = c.read_response(std::chrono::seconds(3));
    EXPECT_EQ(r.status, 200) << r.head << r.body;
    if (i == 2) {
      EXPECT_EQ(r.json["object"], "chat.completion") << r.body;
    } else if (i == 3) {
      EXPECT_EQ(r.json["object"], "list") << r.body;
    }
  }
  EXPECT_LT(seconds_since(t0), 2.0);
  // the connection stays usable
  ASSERT_TRUE(c.send(health));
  EXPECT_EQ(c.read_response(std::chrono::seconds(3)).status, 200);
  // a request that asks for close is the last one answered, at once
  ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n" + health));
  RawResponse last = c.read_response(std::chrono::seconds(3));
  EXPECT_EQ(last.status, 200);
  EXPECT_EQ(last.header("Connection"), "close");
  EXPECT_TRUE(c.closed_within(std::chrono::seconds(1)));
}

// Issue 16 #6: ~80 idle keep-alive connections occupied every worker, and /health took 4-5 s.
TEST_F(ServerTest, IdleConnectionsDoNotDelayHealth) {
  HttpServerConfig sc;
  sc.max_in_flight = 64;  // ninfer-serve's default, which used to make 80 workers
  start({}, sc);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 200; ++i) idle.push_back(std::make_unique<RawConnection>(port_));  // connected, silent
  for (int i = 0; i < 50; ++i) {  // one request, then idle on keep-alive
    auto c = std::make_unique<RawConnection>(port_);
    ASSERT_TRUE(c->send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(c->read_response().status, 200);
    idle.push_back(std::move(c));
  }
  double worst = 0;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(get("/health").status, 200);
    EXPECT_EQ(get("/metrics").status, 200);
    worst = std::max(worst, seconds_since(t0));
  }
  EXPECT_LT(worst, 0.5) << "/health + /metrics took " << worst << " s with 250 idle connections";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(post("/v1/chat/completions", chat_body("with idle neighbours")).status, 200);
  EXPECT_LT(seconds_since(t0), 1.0);
}

TEST_F(ServerTest, ConnectionsOverTheLimitAre503AtOnce) {
  HttpServerConfig sc;
  sc.connections.max_connections = 8;
  start({}, sc);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 8; ++i) {  // hold every slot (a served request proves each was accepted)
    idle.push_back(std::make_unique<RawConnection>(port_));
    ASSERT_TRUE(idle.back()->send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(idle.back()->read_response().status, 200);
  }
  RawConnection over(port_);
  ASSERT_TRUE(over.connected());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(over.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  RawResponse r = over.read_response(std::chrono::seconds(3));
  EXPECT_LT(seconds_since(t0), 1.0);
  EXPECT_EQ(r.status, 503) << r.head << r.body;
  EXPECT_EQ(r.code(), "too_many_connections") << r.body;
  EXPECT_EQ(r.json["error"]["type"], "service_unavailable_error");
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(over.closed_within(std::chrono::seconds(2)));
  idle.clear();  // slots free again
  EXPECT_TRUE(eventually([&] { return get("/health").status == 200; }));
  expect_still_serving();
  EXPECT_NE(server_->metrics().render("m", {}, 0).find("code=\"503\""), std::string::npos);
}

// --max-connections-per-client: one address cannot hold more; another address (127.0.0.2 is loopback too) can.
TEST_F(ServerTest, ConnectionsOverThePerClientLimitAre503AndOthersAreServed) {
  HttpServerConfig sc;
  sc.connections.max_connections_per_client = 4;
  start({}, sc);
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawConnection>(port_, "127.0.0.1"));
    ASSERT_TRUE(held.back()->send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(held.back()->read_response().status, 200);
  }
  RawConnection over(port_, "127.0.0.1");
  ASSERT_TRUE(over.connected());
  ASSERT_TRUE(over.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  RawResponse r = over.read_response(std::chrono::seconds(3));
  EXPECT_EQ(r.status, 503) << r.head << r.body;
  EXPECT_EQ(r.code(), "too_many_connections_from_client") << r.body;
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_TRUE(over.closed_within(std::chrono::seconds(2)));
  RawConnection other(port_, "127.0.0.2");
  ASSERT_TRUE(other.connected()) << "127.0.0.2 is not usable here";
  ASSERT_TRUE(other.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(other.read_response(std::chrono::seconds(3)).status, 200);
  held.pop_back();  // a slot of 127.0.0.1 frees up
  EXPECT_TRUE(eventually([&] {
    RawConnection again(port_, "127.0.0.1");
    return again.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n") && again.read_response().status == 200;
  }));
}

// No CORS unless asked: without --cors-origin no Access-Control-* header, and OPTIONS is not a route. With it,
// an allowed origin may read answers and gets its preflight; another origin gets nothing.
TEST_F(ServerTest, NoCorsHeadersUnlessAsked) {
  start();
  {
    RawConnection c(port_);
    ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n\r\n"));
    RawResponse r = c.read_response();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.head.find("Access-Control-"), std::string::npos) << r.head;
    RawConnection p(port_);
    ASSERT_TRUE(p.send("OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
                       "Access-Control-Request-Method: POST\r\n\r\n"));
    RawResponse pre = p.read_response();
    EXPECT_EQ(pre.status, 404) << pre.head;
    EXPECT_EQ(pre.head.find("Access-Control-"), std::string::npos) << pre.head;
  }
}

TEST_F(ServerTest, CorsForTheOriginsAsked) {
  HttpServerConfig sc;
  sc.cors_origins = {"https://app.example"};
  sc.api_keys = {"k1"};
  start({}, sc);
  RawConnection pre(port_);
  ASSERT_TRUE(pre.send("OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
                       "Access-Control-Request-Method: POST\r\n"
                       "Access-Control-Request-Headers: authorization, content-type\r\n\r\n"));
  RawResponse r = pre.read_response();
  EXPECT_EQ(r.status, 204) << r.head;  // a preflight needs no key: browsers send none
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(r.header("Access-Control-Allow-Methods"), "GET, POST, OPTIONS");
  EXPECT_EQ(r.header("Access-Control-Allow-Headers"), "authorization, content-type");
  EXPECT_EQ(r.header("Vary"), "Origin");
  const std::string body = chat_body("from a page").dump();
  RawConnection post(port_);
  ASSERT_TRUE(post.send(fmt::format("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
                                    "Authorization: Bearer k1\r\nContent-Type: application/json\r\n"
                                    "Content-Length: {}\r\n\r\n{}", body.size(), body)));
  RawResponse ok = post.read_response(std::chrono::seconds(5));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.header("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(ok.header("Access-Control-Expose-Headers"), "X-Request-Id");
  RawConnection other(port_);
  ASSERT_TRUE(other.send("OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://evil.example\r\n"
                         "Access-Control-Request-Method: POST\r\n\r\n"));
  RawResponse no = other.read_response();
  EXPECT_NE(no.status, 204);
  EXPECT_EQ(no.head.find("Access-Control-Allow-Origin"), std::string::npos) << no.head;
  RawConnection unauth(port_);  // CORS does not open the API: the key is still required
  ASSERT_TRUE(unauth.send(fmt::format("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
                                      "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                                      body.size(), body)));
  RawResponse denied = unauth.read_response();
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.header("Access-Control-Allow-Origin"), "https://app.example");  // the page may read why
}

TEST_F(ServerTest, IdleAndSlowConnectionsAreClosedOnTime) {
  HttpServerConfig sc;
  sc.connections.keep_alive_timeout = milliseconds(300);
  sc.connections.read_timeout = milliseconds(300);
  sc.connections.body_timeout = milliseconds(700);
  start({}, sc);
  {  // idle after a request: closed after the keep-alive timeout
    RawConnection c(port_);
    ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(c.read_response().status, 200);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(c.closed_within(std::chrono::seconds(3)));
    EXPECT_GT(seconds_since(t0), 0.2);
  }
  {  // silent from the start
    RawConnection c(port_);
    EXPECT_TRUE(c.closed_within(std::chrono::seconds(3)));
  }
  {  // half a request head, then nothing
    RawConnection c(port_);
    ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nHost: x\r\n"));
    RawResponse r = c.read_response(std::chrono::seconds(3));
    EXPECT_EQ(r.status, 408) << r.head << r.body;
    EXPECT_EQ(r.code(), "request_timeout");
    EXPECT_TRUE(c.closed_within(std::chrono::seconds(2)));
  }
  {  // half a request line
    RawConnection c(port_);
    ASSERT_TRUE(c.send("GET /hea"));
    RawResponse r = c.read_response(std::chrono::seconds(3));
    EXPECT_EQ(r.status, 408) << r.head << r.body;
    EXPECT_EQ(r.code(), "request_timeout");
  }
  {  // a head trickled a byte at a time: the deadline is for the whole head, not per read
    RawConnection c(port_);
    ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nX-Slow: "));
    const auto t0 = std::chrono::steady_clock::now();
    RawResponse r;
    for (int i = 0; i < 40 && r.status == 0; ++i) {
      c.send("a");
      r = c.read_response(milliseconds(50));
    }
    EXPECT_EQ(r.status, 408) << r.head << r.body;
    EXPECT_LT(seconds_since(t0), 1.5);
  }
  {  // a body that stalls
    RawConnection c(port_);
    ASSERT_TRUE(c.send(raw_post("/v1/chat/completions", std::string(100, ' ')).substr(0, 120)));
    RawResponse r = c.read_response(std::chrono::seconds(3));
    EXPECT_EQ(r.status, 408) << r.head << r.body;
    EXPECT_EQ(r.code(), "request_timeout");
  }
  {  // a body trickled: the whole body within body_timeout
    RawConnection c(port_);
    const std::string req = raw_post("/v1/chat/completions", chat_body("x").dump() + std::string(200, ' '));
    const size_t head = req.find("\r\n\r\n") + 4;
    ASSERT_TRUE(c.send(req.substr(0, head)));
    const auto t0 = std::chrono::steady_clock::now();
    RawResponse r;
    for (size_t i = head; i < req.size() && r.status == 0; ++i) {
      c.send(req.substr(i, 1));
      r = c.read_response(milliseconds(100));
    }
    EXPECT_EQ(r.status, 408) << r.head << r.body;
    EXPECT_LT(seconds_since(t0), 2.0);
  }
  expect_still_serving();
}

}  // namespace
}  // namespace ninfer::server::testing
