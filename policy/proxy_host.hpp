// The egress proxy's host name and published IPv4, validated before anything touches /etc/hosts.
//
// The host is checked before any command runs (C22): ASCII letters and digits, `.` and `-`, no leading or
// trailing dot, no `..`. The IPv4 comes from the file the proxy publishes; it is read the way the original's
// shell reads it (every space, tab, CR and LF removed) and must be four 0–255 octets without leading zeros
// (C25) — the same rule the sidecar's network-policy applies, so both sides agree on the address.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace maka_eval::policy {

inline constexpr std::string_view default_proxy_host = "maka-eval-mitmproxy";
inline constexpr std::string_view proxy_ipv4_path = "/opt/maka-egress/proxy-ipv4";

[[nodiscard]] bool is_valid_proxy_host(std::string_view host);
[[nodiscard]] bool is_valid_ipv4(std::string_view ip);
// The published file's content → the address, or nullopt when it is not one.
[[nodiscard]] std::optional<std::string> published_ipv4(std::string_view file_content);

} // namespace maka_eval::policy
