// Capability evidence: the five `Cap*` sets of /proc/<pid>/status and which egress-bypassing ones they hold.
//
// The gate refuses a subject that could reach the network past the egress policy: NET_RAW (raw sockets,
// AF_PACKET) or NET_ADMIN (rewrite the rules) in *any* set — including the bounding set, from which a setuid
// binary could regain them, and the inheritable and ambient sets (the original gate's cases C11–C12).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace maka_eval::policy {

inline constexpr std::uint64_t cap_net_admin = std::uint64_t{1} << 12;
inline constexpr std::uint64_t cap_net_raw = std::uint64_t{1} << 13;

using capability_fields = std::vector<std::pair<std::string, std::string>>;

// Every `CapXxx:` line of a /proc/<pid>/status text, as name → value text, in file order.
[[nodiscard]] capability_fields parse_status(std::string_view status);

// One reported value as Python's int(text, 16) reads it (whitespace, `0x`, single underscores); no sign.
[[nodiscard]] std::optional<std::uint64_t> parse_hex(std::string_view text);

// Names of the bypass capabilities set in `granted`, sorted ("NET_ADMIN", "NET_RAW").
[[nodiscard]] std::vector<std::string> bypass_capabilities(std::uint64_t granted);

} // namespace maka_eval::policy
