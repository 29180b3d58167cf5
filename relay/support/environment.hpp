// This process's environment variables, read through a function that tests replace.
#pragma once

#include <optional>
#include <string>

namespace maka_eval::relay {

// A variable's value, or nullopt when it is not set.
using env_lookup = std::optional<std::string> (*)(const char* name);

// The real environment (getenv).
[[nodiscard]] std::optional<std::string> process_env(const char* name);

} // namespace maka_eval::relay
