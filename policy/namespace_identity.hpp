// Network-namespace identity as `readlink /proc/self/ns/net` prints it: exactly `net:[<digits>]`.
//
// Two sides that both answer something malformed ("", "shared", "net:[]") must never count as sharing a
// namespace (C17), so equality is only ever asked of well-formed identities.
#pragma once

#include <string_view>

namespace maka_eval::policy {

[[nodiscard]] bool is_namespace_identity(std::string_view text);
[[nodiscard]] bool same_namespace(std::string_view a, std::string_view b);

} // namespace maka_eval::policy
