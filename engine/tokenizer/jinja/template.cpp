// Owns Template: parsing once and rendering with errors mapped to "chat template line N: ..." messages.
#include "engine/tokenizer/jinja/template.h"

#include "engine/core/error.h"
#include "engine/tokenizer/jinja/parser.h"

namespace ninfer::jinja {

Template::Template(std::string_view source) : body_(parse(source)) {}

Text Template::render(const nlohmann::ordered_json& context, const Limits& limits,
                      std::optional<std::time_t> now) const {
  if (!context.is_object()) fail(ErrorKind::kInvalidArgument, "chat template context must be a JSON object");
  Object vars;
  for (const auto& [k, v] : context.items()) vars.items.emplace_back(k, Value::from_json(v));
  Interpreter in(limits, now);
  try {
    return in.run(body_, vars);
  } catch (const TemplateError& e) {
    fail(ErrorKind::kInvalidArgument, "chat template line {}: {}", in.line(), e.what());
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    fail(ErrorKind::kInvalidArgument, "chat template line {}: out of memory while rendering", in.line());
  } catch (const std::exception& e) {
    fail(ErrorKind::kInvalidArgument, "chat template line {}: {}", in.line(), e.what());
  }
}

}  // namespace ninfer::jinja
