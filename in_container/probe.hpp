// What the helper reports about where it runs: cwd, ids, the five capability sets, the network namespace.
// This is the evidence the relay's egress gate judges (policy/), gathered without a shell or any tool.
#pragma once

#include "contracts/session_messages.hpp"

namespace maka_eval::in_container {

[[nodiscard]] contracts::hello_message probe_self();

} // namespace maka_eval::in_container
