// The egress gate's decisions, in the original's order and with its texts.
//
// The relay gathers evidence (the helper's probe, the policy sidecar's namespace, the pin report); this
// file only judges it. Order matters and is the original's: unreadable namespaces first, then unreadable
// capabilities, then held bypass capabilities, then a foreign namespace — so the same task gets the same
// refusal from either relay.
#pragma once

#include "policy/capabilities.hpp"

#include <optional>
#include <string>
#include <string_view>

#include <boost/system/result.hpp>

namespace maka_eval::policy {

inline constexpr std::string_view namespace_prefix = "MAKA-EVAL-POLICY-NAMESPACE-V1 ";
inline constexpr std::string_view default_policy_service = "harbor-docker-egress-control-sidecar";

enum class gate_error {
    evidence_unreadable = 1,
    capabilities_unreadable,
    bypass_capability,
    foreign_namespace,
    proxy_host_invalid,
    pin_failed,
};

struct refusal {
    gate_error code;
    std::string message;
};

// The one value after `prefix` in a probe's output (lines as str.splitlines gives them, value stripped);
// nullopt unless exactly one line carries the prefix.
[[nodiscard]] std::optional<std::string> sole_probe_line(std::string_view output, std::string_view prefix);

// Capabilities and namespaces: the subject may start only if this passes.
[[nodiscard]] boost::system::result<void, refusal> check_subject(const capability_fields& capabilities,
                                                                 std::string_view subject_namespace,
                                                                 std::string_view policy_namespace);

// MAKA_EVAL_EGRESS_ALLOWED_HOST (unset or empty: the default host), validated before any command runs.
[[nodiscard]] boost::system::result<std::string, refusal>
proxy_host_from(std::optional<std::string_view> configured);

// The pin's report must name the host asked for and a valid dotted quad (C28).
[[nodiscard]] boost::system::result<void, refusal>
check_pinned(std::string_view ip, std::string_view reported_host, std::string_view host);

[[nodiscard]] refusal make_refusal(gate_error code);

[[noreturn]] void throw_exception_from_error(const refusal& e, const boost::source_location& location);

} // namespace maka_eval::policy
