// This process's environment (see environment.hpp).
#include "relay/support/environment.hpp"

#include <cstdlib>

namespace maka_eval::relay {

std::optional<std::string> process_env(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
}

} // namespace maka_eval::relay
