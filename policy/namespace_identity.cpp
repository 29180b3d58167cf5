// Network-namespace identity (see namespace_identity.hpp).
#include "policy/namespace_identity.hpp"

#include <algorithm>

namespace maka_eval::policy {

bool is_namespace_identity(std::string_view text) {
    constexpr std::string_view open = "net:[";
    if (!text.starts_with(open) || !text.ends_with("]") || text.size() < open.size() + 2) {
        return false;
    }
    const auto digits = text.substr(open.size(), text.size() - open.size() - 1);
    return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool same_namespace(std::string_view a, std::string_view b) {
    return is_namespace_identity(a) && is_namespace_identity(b) && a == b;
}

} // namespace maka_eval::policy
