#include "server/http_server.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/core/error.h"
#include "server/api_error.h"
#include "server/cors.h"
#include "server/generation_reply.h"
#include "server/http_connection.h"
#include "server/http_reply.h"
#include "server/jsonl_log.h"
#include "server/openai_request.h"
#include "server/tokenize_request.h"
#include "server/openai_response.h"
#include "server/request_report.h"
#include "server/request_stream.h"

namespace ninfer::server {

namespace {

using json = nlohmann::json;
using Req = httplib::Request;
using Res = httplib::Response;

// Both the JSONL writer and the metrics outlive the HttpServer when the engine still holds sinks.
struct Recorder {
  std::shared_ptr<ServerMetrics> metrics = std::make_shared<ServerMetrics>();
  std::unique_ptr<JsonlWriter> jsonl;

  // `sequences`: the engine results of the request's choices, each counted by /metrics as a finished sequence; none
  // for a request the engine refused.
  void finished(const RequestRecord& rec, const std::vector<FinalResult>& sequences) {
    for (const FinalResult& r : sequences) metrics->record_finished(r);
    if (sequences.empty()) metrics->record_rejected();
    if (jsonl) jsonl->write(jsonl_record(rec));
  }
};

int outcome_status(StopReason r) {
  if (r == StopReason::kError) return 500;
  if (r == StopReason::kCancelled) return 499;  // the client closed the request (or the server stopped)
  return 200;
}

bool equal_constant_time(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// The answer to a request the HTTP library failed itself (res.status set, no body), from what the connection's
// stream saw. Every one of them but 404 ends the connection: the rest of its bytes cannot be trusted.
ApiError library_error(const Req& req, const Res& res, const HttpServerConfig& config) {
  const ConnectionState* st = current_connection();
  const int status = res.status;
  if (status == 404) return route_not_found(req.method, req.path);
  if (status == 413 || (st && st->body_too_large)) return body_too_large(config.max_body_bytes);
  if (status == 408 || (st && st->timed_out))
    return http_error(408, "request_timeout",
                      st && st->in_body
                          ? fmt::format("The request body did not arrive in time (no progress for {} ms, or not all "
                                        "of it within {} ms).", config.connections.read_timeout.count(), config.connections.body_timeout.count())
                          : fmt::format("The request headers did not arrive within {} ms.", config.connections.read_timeout.count()));
  if (status == 414) return http_error(414, "uri_too_long", "The request URI is longer than 8192 bytes.");
  if (status == 431 || (st && !st->in_body && (st->head_too_large || st->longest_line > 8192)))
    return http_error(431, "request_header_too_large",
                      fmt::format("The request headers are too large (at most {} bytes in all, 8192 per line).",
                                  config.connections.max_header_bytes));
  if (status == 415)
    return http_error(415, "unsupported_content_encoding",
                      "The Content-Encoding is not supported: send gzip, deflate, br or none.");
  if (status == 416) return http_error(416, "invalid_range", "The Range header is not valid.");
  if (status == 400 && st && st->in_body)
    return http_error(400, "invalid_body",
                      "The request body could not be read: malformed chunked encoding, invalid compressed data, or "
                      "the connection ended before the whole body arrived.");
  if (status == 400)
    return http_error(400, "malformed_request",
                      "Malformed HTTP request: the request line (method, target, HTTP/1.0 or HTTP/1.1) or a header "
                      "line could not be parsed.");
  if (status >= 500) return internal_error(fmt::format("HTTP error {}.", status));
  return http_error(status, "http_error", fmt::format("HTTP error {}.", status));
}

// Checks the body framing before httplib reads a body (pre-routing): one Content-Length of digits within the
// limit, or Transfer-Encoding: chunked alone; a POST needs one of them. nullopt when the request may go on.
std::optional<ApiError> framing_error(const Req& req, const HttpServerConfig& config) {
  ConnectionState* st = current_connection();
  if (st && st->bad_header_line)
    return http_error(400, "malformed_request",
                      "Malformed HTTP request: a header line is not 'name: value' (no colon, whitespace before the "
                      "colon, or a folded line).");
  const size_t lengths = req.get_header_value_count("Content-Length");
  if (req.has_header("Content-Encoding")) {
    const std::string ce = req.get_header_value("Content-Encoding");
    if (ce != "gzip" && ce != "deflate" && ce != "br" && ce != "identity")
      return http_error(415, "unsupported_content_encoding",
                        "The Content-Encoding is not supported: send gzip, deflate, br or none.");
  }
  const size_t encodings = req.get_header_value_count("Transfer-Encoding");
  if (encodings > 0) {
    const std::string te = req.get_header_value("Transfer-Encoding");
    if (encodings > 1 || lengths > 0 || (te != "chunked" && te != "Chunked" && te != "CHUNKED"))
      return http_error(encodings > 1 || lengths > 0 ? 400 : 501, "unsupported_transfer_encoding",
                        "Send the body with one Content-Length, or with 'Transfer-Encoding: chunked' alone.");
    if (st) st->chunked = true;  // the stream checks the framing strictly as the body is read
    return std::nullopt;
  }
  if (lengths == 0) {
    if (req.method == "POST")
      return http_error(411, "length_required", "A POST needs a Content-Length or 'Transfer-Encoding: chunked'.");
    return std::nullopt;
  }
  const std::string cl = req.get_header_value("Content-Length");
  bool digits = !cl.empty() && cl.size() <= 19;
  for (char c : cl) digits = digits && c >= '0' && c <= '9';
  for (size_t i = 1; digits && i < lengths; ++i) digits = req.get_header_value("Content-Length", i) == cl;
  if (!digits) return http_error(400, "malformed_request", "The Content-Length header is not one decimal number.");
  if (std::stoull(cl) > config.max_body_bytes) return body_too_large(config.max_body_bytes);
  return std::nullopt;
}

}  // namespace

struct HttpServer::Impl {
  struct Entry {
    std::shared_ptr<RequestStream> stream;
    std::shared_ptr<ChoiceGroup> group;
  };

  // Holds a request's in-flight slots (one per choice); releases them when the handler or the stream's response is
  // done.
  struct Ticket {
    Impl* impl;
    uint64_t serial;
    ~Ticket() { impl->release(serial); }
  };

  Impl(HttpServerConfig c, EnginePort& e) : config(std::move(c)), engine(e) {
    if (!config.log_jsonl_path.empty()) recorder->jsonl = std::make_unique<JsonlWriter>(config.log_jsonl_path);
    std::random_device rd;
    id_prefix = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }

  HttpServerConfig config;
  EnginePort& engine;
  std::shared_ptr<Recorder> recorder = std::make_shared<Recorder>();
  ConnectionServer svr{config.connections, config.max_body_bytes,
                       [](int status, const char* code, const char* message) {
                         return http_error(status, code, message).body();
                       },
                       [m = recorder->metrics](int status) { m->record_http_status(status); }};
  std::thread listener;
  int port = -1;
  std::atomic<bool> stopping{false};  // drain() or stop() began: no new generation requests
  std::atomic<bool> draining{false};
  bool started = false;
  uint64_t id_prefix = 0;
  std::atomic<uint64_t> id_counter{0};

  std::mutex inflight_mu;
  std::condition_variable inflight_cv;
  std::map<uint64_t, Entry> inflight;
  int inflight_choices = 0;  // the choices of the requests in `inflight`
  uint64_t next_serial = 1;

  std::string new_id(const char* prefix) {
    return fmt::format("{}{:016x}{:08x}", prefix, id_prefix, id_counter.fetch_add(1) + 1);
  }

  // A request of n choices takes n of max_in_flight's slots.
  std::shared_ptr<Ticket> admit(const std::shared_ptr<RequestStream>& stream,
                                const std::shared_ptr<ChoiceGroup>& group) {
    std::lock_guard<std::mutex> lock(inflight_mu);
    if (stopping || inflight_choices + group->size() > config.max_in_flight) return nullptr;
    auto t = std::make_shared<Ticket>();
    t->impl = this;
    t->serial = next_serial++;
    inflight[t->serial] = Entry{stream, group};
    inflight_choices += group->size();
    return t;
  }

  void release(uint64_t serial) {
    {
      std::lock_guard<std::mutex> lock(inflight_mu);
      auto it = inflight.find(serial);
      if (it != inflight.end()) {
        inflight_choices -= it->second.group->size();
        inflight.erase(it);
      }
    }
    inflight_cv.notify_all();
  }

  int64_t in_flight() {
    std::lock_guard<std::mutex> lock(inflight_mu);
    return static_cast<int64_t>(inflight.size());
  }

  std::string served_name(const ModelInfo& info) const {
    return config.served_model_name.empty() ? info.name : config.served_model_name;
  }

  void check_auth(const Req& req) const {
    if (config.api_keys.empty()) return;
    std::string key;
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) key = auth.substr(7);
    else key = req.get_header_value("X-Api-Key");
    if (key.empty())
      throw ApiException(unauthorized("Missing API key: send it as 'Authorization: Bearer <key>'."));
    for (const std::string& k : config.api_keys)
      if (equal_constant_time(k, key)) return;
    throw ApiException(unauthorized("Incorrect API key provided."));
  }

  ModelInfo require_ready() const {
    if (!engine.ready())
      throw ApiException(service_unavailable(
          "The model is still loading; retry when GET /health answers 200.", "model_loading"));
    return engine.model_info();
  }

  // Reads the body through httplib's content reader (decoded: de-chunked and decompressed), at most
  // max_body_bytes of it. A body that cannot be read ends the connection after the answer.
  std::string read_body(const Req& req, Res& res, const httplib::ContentReader& reader) const {
    std::string body;
    bool too_large = false;
    const bool ok = reader([&](const char* data, size_t n) {
      if (body.size() + n > config.max_body_bytes) return !(too_large = true);
      body.append(data, n);
      return true;
    });
    if (ok) return body;
    close_after_response(res);
    const ConnectionState* st = current_connection();
    if (too_large || res.status == 413 || (st && st->body_too_large)) throw ApiException(body_too_large(config.max_body_bytes));
    throw ApiException(library_error(req, res, config));  // the status httplib's reader set: 400, 415 or 500
  }

  // ordered_json: tool schemas and tool-call arguments keep their key order into the chat template.
  static nlohmann::ordered_json parse_body(const std::string& body) {
    if (body.empty()) throw ApiException(invalid_json("the body is empty."));
    try {
      return nlohmann::ordered_json::parse(body);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond a double (1e400)
      throw ApiException(invalid_json(e.what()));
    }
  }

  void install_routes();
  void handle_generation(const Req& req, Res& res, const std::string& raw_body, bool chat);
};

namespace {

template <typename Fn>
httplib::Server::Handler guarded(Fn fn) {
  return [fn](const Req& req, Res& res) {
    try {
      fn(req, res);
    } catch (const ApiException& e) {
      send_error(res, e.error());
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", req.method, req.path, e.what());
      send_error(res, internal_error(fmt::format("Internal server error: {}", e.what())));
    } catch (...) {
      spdlog::error("{} {}: unknown exception", req.method, req.path);
      send_error(res, internal_error("Internal server error: unknown exception."));
    }
  };
}

// The same for the POST routes, which read their body themselves.
template <typename Fn>
httplib::Server::HandlerWithContentReader guarded_reader(Fn fn) {
  return [fn](const Req& req, Res& res, const httplib::ContentReader& reader) {
    guarded([&](const Req& r, Res& s) { fn(r, s, reader); })(req, res);
  };
}

}  // namespace

void HttpServer::Impl::install_routes() {
  svr.Get("/health", guarded([this](const Req&, Res& res) {
    if (stopping) {  // a load balancer should send new work elsewhere
      ApiError e = service_unavailable("The server is shutting down.", "server_stopping");
      nlohmann::ordered_json body = e.to_json();
      body["status"] = draining ? "draining" : "stopping";
      send_json(res, body, 503);
      return;
    }
    if (!engine.ready()) {
      ApiError e = service_unavailable("The model is loading.", "model_loading");
      nlohmann::ordered_json body = e.to_json();
      body["status"] = "loading";
      send_json(res, body, 503);
      return;
    }
    send_json(res, {{"status", "ok"}});
  }));

  svr.Get("/metrics", guarded([this](const Req&, Res& res) {
    std::string model = config.served_model_name;
    if (model.empty() && engine.ready()) model = engine.model_info().name;
    res.status = 200;
    res.set_content(recorder->metrics->render(model, engine.load(), in_flight(), recorder->jsonl.get()),
                    "text/plain; version=0.0.4; charset=utf-8");
  }));

  svr.Get("/v1/models", guarded([this](const Req& req, Res& res) {
    check_auth(req);
    ModelInfo info = require_ready();
    send_json(res, models_json(served_name(info), info.created, info.max_context));
  }));

  svr.Get(R"(/v1/models/(.+))", guarded([this](const Req& req, Res& res) {
    check_auth(req);
    ModelInfo info = require_ready();
    const std::string id = req.matches[1];
    if (id != served_name(info)) throw ApiException(model_not_found(id));
    send_json(res, model_json(id, info.created));
  }));

  for (const auto& [path, chat] : {std::pair{"/v1/chat/completions", true}, std::pair{"/v1/completions", false}})
    svr.Post(path, guarded_reader([this, chat](const Req& req, Res& res, const httplib::ContentReader& reader) {
      check_auth(req);
      handle_generation(req, res, read_body(req, res, reader), chat);
    }));

  // vLLM's and llama.cpp's tokenizer endpoints (docs/api.md "Tokenize"): no engine step, answered on this thread.
  svr.Post("/tokenize", guarded_reader([this](const Req& req, Res& res, const httplib::ContentReader& reader) {
    check_auth(req);
    const nlohmann::ordered_json body = parse_body(read_body(req, res, reader));
    const ModelInfo info = require_ready();
    if (!info.has_tokenizer) throw ApiException(no_tokenizer(std::nullopt));
    const GenerationRequest g = parse_tokenize_request(body);
    send_json(res, tokenize_response(engine.tokenize(g), info.max_context));
  }));
  svr.Post("/detokenize", guarded_reader([this](const Req& req, Res& res, const httplib::ContentReader& reader) {
    check_auth(req);
    const nlohmann::ordered_json body = parse_body(read_body(req, res, reader));
    if (!require_ready().has_tokenizer) throw ApiException(no_tokenizer(std::nullopt));
    send_json(res, detokenize_response(engine.detokenize(parse_detokenize_request(body))));
  }));

  // Before httplib reads a body: refuse bodies it would read unbounded or wrongly, at once.
  svr.set_pre_routing_handler([this](const Req& req, Res& res) {
    try {
      if (apply_cors(config.cors_origins, req, res)) return httplib::Server::HandlerResponse::Handled;  // preflight
      std::optional<ApiError> e = framing_error(req, config);
      if (!e) return httplib::Server::HandlerResponse::Unhandled;
      close_after_response(res);
      send_error(res, *e);
    } catch (const std::exception& ex) {
      close_after_response(res);
      send_error(res, internal_error(fmt::format("Internal server error: {}", ex.what())));
    }
    return httplib::Server::HandlerResponse::Handled;
  });

  // A response that closes the connection does not also announce keep-alive.
  svr.set_post_routing_handler([](const Req&, Res& res) {
    if (res.get_header_value("Connection") == "close") res.headers.erase("Keep-Alive");
  });

  // Runs outside httplib's try/catch: nothing may escape it.
  svr.set_error_handler(httplib::Server::HandlerWithResponse([this](const Req& req, Res& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    try {
      ApiError e = library_error(req, res, config);
      if (e.status != 404) close_after_response(res);
      send_error(res, e);
    } catch (...) {
      close_after_response(res);
      res.status = 500;
      res.set_content(R"({"error":{"message":"Internal server error.","type":"server_error","param":null,"code":"internal_error"}})",
                      kJsonContentType);
    }
    return httplib::Server::HandlerResponse::Handled;
  }));

  svr.set_exception_handler([](const Req& req, Res& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("{} {}: {}", req.method, req.path, what);
    send_error(res, internal_error(fmt::format("Internal server error: {}", what)));
  });

  std::shared_ptr<ServerMetrics> metrics = recorder->metrics;
  svr.set_logger([metrics](const Req& req, const Res& res) {
    metrics->record_http_status(res.status);
    spdlog::debug("{} {} {}", req.method, req.path, res.status);
  });
}

void HttpServer::Impl::handle_generation(const Req& req, Res& res, const std::string& raw_body, bool chat) {
  nlohmann::ordered_json body = parse_body(raw_body);
  ModelInfo info = require_ready();
  const std::string served = served_name(info);
  const RequestPolicy policy{config.force_greedy, config.reasoning_budget};

  Prepared p;
  p.chat = chat;
  if (chat && !info.has_tokenizer) throw ApiException(no_tokenizer("messages"));
  if (chat) {
    ChatCompletionRequest r = parse_chat_request(body);
    p.gen = to_generation_request(r, new_id("chatcmpl-"), info.default_sampling, policy);
    p.model = r.model;
    p.stream = r.stream;
    p.include_usage = r.include_usage;
    p.logprobs = r.logprobs;
    p.max_tokens_field = r.max_tokens_field.empty() ? "max_tokens" : r.max_tokens_field;
    p.user = r.user;
    p.n = r.n;
    require_servable_tool_choice(p.gen, info.tool_call_format);
    p.tool_calls = tool_call_parser_options(p.gen, info.tool_call_format);
  } else {
    CompletionRequest r = parse_completion_request(body);
    p.gen = to_generation_request(r, new_id("cmpl-"), info.default_sampling, policy);
    p.model = r.model;
    p.stream = r.stream;
    p.include_usage = r.include_usage;
    p.logprobs = r.logprobs.has_value();
    p.max_tokens_field = "max_tokens";
    p.user = r.user;
    p.n = r.n;
    if (!info.has_tokenizer) {  // no text in or out: token ids only
      if (r.prompt_kind != PromptKind::kTokens) throw ApiException(no_tokenizer("prompt"));
      if (!r.stop.empty()) throw ApiException(no_tokenizer("stop"));
      if (r.logprobs) throw ApiException(no_tokenizer("logprobs"));
      p.token_ids = true;
    }
  }
  if (p.n > config.max_n)
    throw ApiException(bad_request(fmt::format("Invalid value for 'n': {} choices asked; this server returns at most {} "
                                               "per request (--max-n); send several requests for more.",
                                               p.n, config.max_n),
                                   "n", "invalid_value"));
  if (p.model && *p.model != served) throw ApiException(model_not_found(*p.model));
  if (p.gen.max_tokens && info.max_context > 0 && *p.gen.max_tokens >= info.max_context)
    throw ApiException(context_length_exceeded(
        fmt::format("This model's maximum context length is {} tokens (prompt + output), but {} is {}, "
                    "which leaves no room for the prompt.",
                    info.max_context, p.max_tokens_field, *p.gen.max_tokens),
        p.max_tokens_field));

  const ResponseHead head{p.gen.request_id, static_cast<int64_t>(std::time(nullptr)), served};
  RequestRecord base;
  base.request_id = head.id;
  base.model = served;
  base.endpoint = chat ? "chat.completions" : "completions";
  base.stream = p.stream;
  base.max_tokens = p.gen.max_tokens;
  base.settings = info.settings;
  base.user = p.user;

  std::shared_ptr<Recorder> rec = recorder;
  const bool many = p.n > 1;
  auto stream = std::make_shared<RequestStream>(
      p.n, recorder->metrics,
      [rec, base, many](const std::vector<FinalResult>& results, const std::vector<bool>& empty_content,
                        double request_s, const std::optional<SubmitResult>& refusal) {
        // One JSONL line per HTTP request; /metrics counts every choice as a finished sequence.
        RequestRecord record = base;
        record.finished_at = std::chrono::system_clock::now();
        record.result = merge_choice_results(results, request_s);
        if (many) record.choices = results;
        record.empty_content = std::find(empty_content.begin(), empty_content.end(), false) == empty_content.end();
        record.http_status = outcome_status(record.result.stop_reason);
        if (refusal) {  // a later choice was refused: the client got that error, the running choices were cancelled
          const ApiError e = rejection_error(*refusal);
          record.http_status = e.status;
          record.result.error = e.message;
        }
        rec->finished(record, results);
      });
  // Choices after the first wait for its prompt to be in the prefix cache, so they start from it (docs/api.md "n").
  auto group = std::make_shared<ChoiceGroup>(p.gen, p.n, info.settings.prefix_reuse, stream);
  std::shared_ptr<Ticket> ticket = admit(stream, group);
  if (!ticket) {
    if (stopping) throw ApiException(service_unavailable("The server is shutting down.", "server_stopping"));
    throw ApiException(queue_full(fmt::format(
        "The server is already serving its limit of {} sequences (a request of n choices counts n); retry later.",
        config.max_in_flight)));
  }

  SubmitResult sr = group->start(engine);
  if (!sr.accepted()) {
    ApiError e = rejection_error(sr);
    RequestRecord record = base;
    record.finished_at = std::chrono::system_clock::now();
    record.result.stop_reason = StopReason::kError;
    record.result.error = e.message;
    record.result.prompt_tokens = sr.prompt_tokens;
    record.empty_content = true;
    record.http_status = e.status;
    recorder->finished(record, {});
    throw ApiException(std::move(e));
  }
  res.set_header("X-Request-Id", head.id);
  ReplyContext ctx{&engine, std::move(p), head, stream, group, ticket};
  if (ctx.p.stream) reply_stream(ctx, res, config.sse_ping_interval);
  else reply_json(ctx, res);
}

HttpServer::HttpServer(HttpServerConfig config, EnginePort& engine)
    : impl_(std::make_unique<Impl>(std::move(config), engine)) {
  Impl& im = *impl_;
  spdlog::default_logger_raw();  // built before the workers log (as in Engine's constructor)
  // httplib's default also sets SO_REUSEPORT, which lets a second server bind the same port and
  // silently share its traffic. Keep only quick rebinding after a restart.
  im.svr.set_socket_options([](socket_t sock) {
    int yes = 1;
#ifdef _WIN32
    setsockopt(sock, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, reinterpret_cast<const char*>(&yes), sizeof(yes));
#else
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
#endif
  });
  im.install_routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::start() {
  Impl& im = *impl_;
  if (im.started) return im.port;
  int port = im.config.port == 0 ? im.svr.bind_to_any_port(im.config.host)
                                 : (im.svr.bind_to_port(im.config.host, im.config.port) ? im.config.port : -1);
  if (port < 0)
    fail(ErrorKind::kIo, "--host/--port: cannot listen on {}:{} (address in use or not available here)",
         im.config.host, im.config.port);
  im.svr.raise_backlog();
  im.port = port;
  im.started = true;
  im.listener = std::thread([&im] { im.svr.listen_after_bind(); });
  return port;
}

int64_t HttpServer::drain(std::chrono::milliseconds timeout, const std::function<bool()>& interrupted) {
  Impl& im = *impl_;
  {
    std::lock_guard<std::mutex> lock(im.inflight_mu);  // admit() decides under this lock
    im.stopping = true;
    im.draining = true;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(im.inflight_mu);
  while (!im.inflight.empty() && std::chrono::steady_clock::now() < deadline) {
    if (interrupted) {
      lock.unlock();
      const bool stop_now = interrupted();
      lock.lock();
      if (stop_now) break;
    }
    im.inflight_cv.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
  }
  im.draining = false;
  return static_cast<int64_t>(im.inflight.size());
}

void HttpServer::stop() {
  Impl& im = *impl_;
  if (!im.started) return;
  {
    std::lock_guard<std::mutex> lock(im.inflight_mu);
    im.stopping = true;
  }
  std::vector<Impl::Entry> entries;
  {
    std::lock_guard<std::mutex> lock(im.inflight_mu);
    for (auto& [serial, e] : im.inflight) entries.push_back(e);
  }
  for (const Impl::Entry& e : entries) e.group->cancel(im.engine);
  // Give the engine time to finish the cancelled requests (their JSONL lines), then wake the rest.
  auto deadline = std::chrono::steady_clock::now() + im.config.stop_grace;
  for (const Impl::Entry& e : entries)
    while (!e.stream->finished() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (const Impl::Entry& e : entries) e.stream->abort();
  {
    std::unique_lock<std::mutex> lock(im.inflight_mu);
    im.inflight_cv.wait_until(lock, deadline + std::chrono::milliseconds(500), [&] { return im.inflight.empty(); });
  }
  im.svr.shutdown();
  if (im.listener.joinable()) im.listener.join();
  im.started = false;
  if (im.recorder->jsonl) im.recorder->jsonl->flush();
}

int HttpServer::port() const { return impl_->port; }

std::string HttpServer::address() const { return fmt::format("http://{}:{}", impl_->config.host, impl_->port); }

const ServerMetrics& HttpServer::metrics() const { return *impl_->recorder->metrics; }

int64_t HttpServer::in_flight() const { return impl_->in_flight(); }

void HttpServer::flush_log() {
  if (impl_->recorder->jsonl) impl_->recorder->jsonl->flush();
}

}  // namespace ninfer::server
