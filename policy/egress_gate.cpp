// The egress gate's decisions (see egress_gate.hpp).
#include "policy/egress_gate.hpp"

#include "contracts/python_text.hpp"
#include "policy/namespace_identity.hpp"
#include "policy/proxy_host.hpp"

#include <stdexcept>

namespace maka_eval::policy {
namespace {

std::string_view strip(std::string_view text) {
    auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F); };
    while (!text.empty() && space(text.front())) {
        text.remove_prefix(1);
    }
    while (!text.empty() && space(text.back())) {
        text.remove_suffix(1);
    }
    return text;
}

} // namespace

refusal make_refusal(gate_error code) {
    switch (code) {
    case gate_error::evidence_unreadable:
        return {code, "Maka Eval could not read the subject isolation evidence"};
    case gate_error::capabilities_unreadable:
        return {code, "Maka Eval could not read the subject capability set"};
    case gate_error::bypass_capability:
        return {
            code,
            "the subject holds a capability that bypasses the Eval egress policy; remove it from the task"};
    case gate_error::foreign_namespace:
        return {code,
                "the subject does not share the network namespace the Eval egress policy was applied to; "
                "remove the task's own networking on the subject service"};
    case gate_error::proxy_host_invalid:
        return {code, "Eval egress proxy host is invalid"};
    case gate_error::pin_failed:
        return {code, "Maka Eval could not pin the Eval egress proxy hostname"};
    }
    return {code, "Maka Eval egress gate refused the subject"};
}

void throw_exception_from_error(const refusal& e, const boost::source_location&) {
    throw std::runtime_error(e.message);
}

std::optional<std::string> sole_probe_line(std::string_view output, std::string_view prefix) {
    std::optional<std::string> found;
    int count = 0;
    for (auto line : contracts::python::splitlines(output)) {
        if (line.starts_with(prefix)) {
            ++count;
            found = std::string(strip(line.substr(prefix.size())));
        }
    }
    return count == 1 ? found : std::nullopt;
}

boost::system::result<void, refusal> check_subject(const capability_fields& capabilities,
                                                   std::string_view subject_namespace,
                                                   std::string_view policy_namespace) {
    if (!is_namespace_identity(subject_namespace) || !is_namespace_identity(policy_namespace)) {
        return make_refusal(gate_error::evidence_unreadable);
    }
    std::uint64_t granted = 0;
    bool eff = false;
    bool prm = false;
    bool bnd = false;
    for (const auto& [name, text] : capabilities) {
        const auto value = parse_hex(text);
        if (!value) {
            return make_refusal(gate_error::capabilities_unreadable);
        }
        // Every reported set counts, not only the three that must be present.
        granted |= *value;
        eff = eff || name == "CapEff";
        prm = prm || name == "CapPrm";
        bnd = bnd || name == "CapBnd";
    }
    if (!eff || !prm || !bnd) {
        return make_refusal(gate_error::capabilities_unreadable);
    }
    if (const auto held = bypass_capabilities(granted); !held.empty()) {
        std::string names;
        for (const auto& name : held) {
            names += (names.empty() ? "" : ", ") + name;
        }
        return refusal{gate_error::bypass_capability,
                       "the subject holds " + names +
                           ", which bypasses the Eval egress policy; remove it from the task"};
    }
    if (!same_namespace(subject_namespace, policy_namespace)) {
        return make_refusal(gate_error::foreign_namespace);
    }
    return {};
}

boost::system::result<std::string, refusal> proxy_host_from(std::optional<std::string_view> configured) {
    const std::string host(configured && !configured->empty() ? *configured : default_proxy_host);
    if (!is_valid_proxy_host(host)) {
        return make_refusal(gate_error::proxy_host_invalid);
    }
    return host;
}

boost::system::result<void, refusal> check_pinned(std::string_view ip, std::string_view reported_host,
                                                  std::string_view host) {
    if (reported_host != host || !is_valid_ipv4(ip)) {
        return make_refusal(gate_error::pin_failed);
    }
    return {};
}

} // namespace maka_eval::policy
