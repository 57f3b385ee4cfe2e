// Owns failpoints: named places where a fault test makes the code throw, armed by NINFER_FAILPOINTS.
#pragma once

#include <string_view>

namespace ninfer {

// NINFER_FAILPOINTS="name:N[,name:N…]" (read once, at the first failpoint reached): the N-th time (1-based)
// the point `name` is reached, failpoint() throws ninfer::Error (kInternal) "failpoint 'name' fired (hit N)";
// "name:N+" fires on the N-th and every later hit. Unset, a failpoint costs two branches.
// The points: "engine.step" (Engine::step, before the model runs a batch), "tp.leader_forward" (multi-process TP: rank
// 0's forward, after the step went to the followers). docs/security.md "Fault tests".
void failpoint(std::string_view name);

}  // namespace ninfer
