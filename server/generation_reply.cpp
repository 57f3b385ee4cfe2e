#include "server/generation_reply.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/connection_probe.h"
#include "server/http_reply.h"
#include "server/request_report.h"
#include "server/sse.h"

namespace ninfer::server {

namespace {

ApiError failed_error(const FinalResult& r) {
  if (r.stop_reason == StopReason::kError)
    return internal_error(fmt::format("The engine failed while generating: {}", r.error));
  return service_unavailable("The request was cancelled: the server is shutting down.", "server_stopping");
}

bool failed(const FinalResult& r) {
  return r.stop_reason == StopReason::kError || r.stop_reason == StopReason::kCancelled;
}

// One choice's output as the reply collects it.
struct ChoiceState {
  CollectedOutput out;
  std::optional<FinalResult> final;
  std::optional<ToolCallParser> tools;  // the content goes through it (chat with tools)
  size_t text_offset = 0;               // completions: bytes of text streamed so far
};

std::vector<ChoiceState> choice_states(const Prepared& p) {
  std::vector<ChoiceState> st(static_cast<size_t>(p.n));
  for (ChoiceState& s : st) {
    if (p.tool_calls) s.tools.emplace(*p.tool_calls);
    s.out.with_token_ids = p.token_ids;
  }
  return st;
}

std::vector<FinalResult> finals_of(const std::vector<ChoiceState>& st) {
  std::vector<FinalResult> r;
  for (const ChoiceState& s : st) r.push_back(*s.final);
  return r;
}

}  // namespace

ApiError rejection_error(const SubmitResult& sr) {
  switch (sr.reject) {
    case RejectKind::kNotReady:
      return service_unavailable(sr.message.empty() ? "The model is still loading." : sr.message, "model_loading");
    case RejectKind::kQueueFull: return queue_full(sr.message.empty() ? "The engine queue is full." : sr.message);
    case RejectKind::kContextLength:
      return context_length_exceeded(sr.message, sr.param.empty() ? "messages" : sr.param);
    case RejectKind::kInvalid:
      return bad_request(sr.message, sr.param.empty() ? std::nullopt : std::optional<std::string>(sr.param),
                         "invalid_value");
    case RejectKind::kInternal:
    case RejectKind::kNone: break;
  }
  return internal_error(sr.message.empty() ? "The engine refused the request." : sr.message);
}

void reply_json(const ReplyContext& c, httplib::Response& res) {
  EnginePort& engine = *c.engine;
  // While waiting, look at the connection every 100 ms: a client that gave up cancels its request.
  const std::optional<ConnectionProbe> probe = ConnectionProbe::for_current_request();
  constexpr auto kProbeEvery = std::chrono::milliseconds(100);
  auto next_probe = std::chrono::steady_clock::now() + kProbeEvery;
  std::vector<ChoiceState> st = choice_states(c.p);
  int finals = 0;
  while (finals < c.p.n) {
    RequestStream::Pending pending = c.stream->wait(probe ? kProbeEvery : std::chrono::milliseconds(1000));
    for (ChoiceDelta& cd : pending.deltas) {
      ChoiceState& s = st[static_cast<size_t>(cd.index)];
      if (s.tools && cd.delta.channel == Channel::kContent) cd.delta.text = s.tools->feed(cd.delta.text).content;
      s.out.add(cd.delta);
    }
    for (ChoiceFinal& f : pending.finals) {
      if (failed(f.result)) {
        c.group->cancel(engine);
        throw ApiException(failed_error(f.result));
      }
      st[static_cast<size_t>(f.index)].final = std::move(f.result);
      ++finals;
    }
    if (finals == c.p.n) break;
    if (pending.aborted) {
      c.group->cancel(engine);
      throw ApiException(service_unavailable("The server is shutting down.", "server_stopping"));
    }
    if (std::optional<SubmitResult> refused = c.group->pump(engine)) throw ApiException(rejection_error(*refused));
    if (probe && std::chrono::steady_clock::now() >= next_probe) {
      next_probe = std::chrono::steady_clock::now() + kProbeEvery;
      if (probe->peer_closed()) {
        c.group->cancel(engine);  // nobody will read the answer: free the sequences now
        send_error(res, ApiError{499, "invalid_request_error", "The client closed the connection.", std::nullopt,
                                 "client_closed_request"});
        return;
      }
    }
  }
  std::vector<ChoiceOutput> choices;
  for (ChoiceState& s : st) {
    if (s.tools) {
      s.out.content += s.tools->finish().content;
      s.out.tool_calls = s.tools->calls();
    }
    choices.push_back({std::move(s.out), *s.final});
  }
  std::vector<FinalResult> results;
  for (const ChoiceOutput& o : choices) results.push_back(o.result);
  const FinalResult total = merge_choice_results(results, c.stream->elapsed_s());
  send_json(res, c.p.chat ? chat_completion_json(c.head, choices, total, c.p.logprobs)
                          : completion_json(c.head, choices, total, c.p.logprobs));
}

void reply_stream(const ReplyContext& c, httplib::Response& res, std::chrono::milliseconds ping) {
  struct State {
    ReplyContext c;
    std::vector<ChoiceState> choices;
    bool started = false;
    int finals = 0;
  };
  auto st = std::make_shared<State>(State{c, choice_states(c.p)});
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      kSseContentType,
      [st, ping](size_t, httplib::DataSink& sink) -> bool {
        const ReplyContext& c = st->c;
        const Prepared& p = c.p;
        const bool usage = p.include_usage;
        EnginePort& engine = *c.engine;
        std::string buf;
        if (!st->started) {
          st->started = true;
          if (p.chat)
            for (int i = 0; i < p.n; ++i) buf += sse_data(chat_role_chunk(c.head, usage, i));
        }
        RequestStream::Pending pending = c.stream->wait(buf.empty() ? ping : std::chrono::milliseconds(0));
        for (ChoiceDelta& cd : pending.deltas) {
          ChoiceState& s = st->choices[static_cast<size_t>(cd.index)];
          Delta& d = cd.delta;
          // Content goes through the tool-call parser: what it releases as content, and the calls it completed.
          std::vector<ToolCallEvent> calls;
          if (s.tools && d.channel == Channel::kContent) {
            ToolCallDelta td = s.tools->feed(d.text);
            d.text = std::move(td.content);
            calls = std::move(td.events);
          }
          auto chunks = p.chat ? chat_output_chunks(c.head, d, calls, p.logprobs, usage, cd.index)
                               : completion_delta_chunks(c.head, d, p.logprobs, usage, s.text_offset, cd.index);
          if (!p.chat) s.text_offset += d.text.size();
          for (const auto& chunk : chunks) buf += sse_data(chunk);
        }
        bool end = false;
        for (ChoiceFinal& f : pending.finals) {
          if (end) break;
          if (failed(f.result)) {
            c.group->cancel(engine);
            buf += sse_data(failed_error(f.result).to_json());
            end = true;
            break;
          }
          ChoiceState& s = st->choices[static_cast<size_t>(f.index)];
          if (s.tools) {  // the end decides held text: content, or a call without </tool_call>
            ToolCallDelta td = s.tools->finish();
            for (const auto& chunk : chat_output_chunks(c.head, Delta{Channel::kContent, td.content, 0, {}}, td.events,
                                                        false, usage, f.index))
              buf += sse_data(chunk);
          }
          const bool has_calls = s.tools && !s.tools->calls().empty();
          buf += sse_data(p.chat ? chat_finish_chunk(c.head, f.result, usage, !usage, has_calls, f.index)
                                 : completion_finish_chunk(c.head, f.result, usage, !usage, f.index));
          s.final = std::move(f.result);
          if (++st->finals == p.n) {
            if (usage)
              buf += sse_data(usage_chunk(c.head, p.chat ? "chat.completion.chunk" : "text_completion",
                                          merge_choice_results(finals_of(st->choices), c.stream->elapsed_s())));
            end = true;
          }
        }
        if (!end && pending.aborted) {
          c.group->cancel(engine);
          buf += sse_data(service_unavailable("The server is shutting down.", "server_stopping").to_json());
          end = true;
        }
        if (!end)
          if (std::optional<SubmitResult> refused = c.group->pump(engine)) {
            buf += sse_data(rejection_error(*refused).to_json());
            end = true;
          }
        if (end) buf += sse_done();
        else if (buf.empty() && pending.deltas.empty()) buf = sse_comment("keep-alive");  // probe the connection
        if (!buf.empty() && !sink.write(buf.data(), buf.size())) {
          c.group->cancel(engine);  // the client went away: free the sequences
          return false;
        }
        if (end) sink.done();
        return true;
      },
      [st](bool success) {
        if (!success && !st->c.stream->finished()) st->c.group->cancel(*st->c.engine);
      });
}

}  // namespace ninfer::server
