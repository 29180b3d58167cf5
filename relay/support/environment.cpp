// This process's environment (see environment.hpp).
#include "relay/support/environment.hpp"

#include <cstdlib>
#include <cstring>
#include <string_view>

extern char** environ;

namespace maka_eval::relay {

std::optional<std::string> process_env(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
}

void forget_variable(const char* name) noexcept {
    const std::string_view wanted(name);
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        if (text.size() > wanted.size() && text.starts_with(wanted) && text[wanted.size()] == '=') {
            ::explicit_bzero(*entry + wanted.size() + 1, text.size() - wanted.size() - 1);
        }
    }
    (void)::unsetenv(name);
}

} // namespace maka_eval::relay
