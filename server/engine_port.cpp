#include "server/engine_port.h"

namespace ninfer::server {

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEos: return "eos";
    case StopReason::kStopString: return "stop_string";
    case StopReason::kOutputLimit: return "output_limit";
    case StopReason::kContextLimit: return "context_limit";
    case StopReason::kReasoningBudget: return "reasoning_budget";
    case StopReason::kCancelled: return "cancelled";
    case StopReason::kError: return "error";
  }
  return "error";
}

std::string_view finish_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEos:
    case StopReason::kStopString: return "stop";
    case StopReason::kOutputLimit:
    case StopReason::kContextLimit:
    case StopReason::kReasoningBudget: return "length";
    case StopReason::kCancelled: return "abort";
    case StopReason::kError: return "error";
  }
  return "error";
}

std::string_view channel_name(Channel channel) {
  return channel == Channel::kReasoning ? "reasoning" : "content";
}

std::string_view tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone: return "none";
    case ToolCallFormat::kXml: return "xml";
    case ToolCallFormat::kHermes: return "hermes";
  }
  return "none";
}

}  // namespace ninfer::server
