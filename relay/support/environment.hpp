// This process's environment variables, read through a function that tests replace.
#pragma once

#include <optional>
#include <string>

namespace maka_eval::relay {

// A variable's value, or nullopt when it is not set.
using env_lookup = std::optional<std::string> (*)(const char* name);

// The real environment (getenv).
[[nodiscard]] std::optional<std::string> process_env(const char* name);

// A secret read from the environment (a credential, the orchestrator's token) gone from it once read: its
// value overwritten where it lies (the initial environment is on the stack, not in the heap that wipes
// itself) and the variable unset, so no later child inherits it either.
void forget_variable(const char* name) noexcept;

} // namespace maka_eval::relay
