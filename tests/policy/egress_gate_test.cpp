// The egress gate's judgements with the original's inputs: C11–C13, C16–C17, C22, C28 and the check order.
#include "policy/egress_gate.hpp"
#include "support/result_printing.hpp"

#include <cstdio>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::policy;

constexpr std::uint64_t constrained = 0xA80425FBULL & ~cap_net_raw & ~cap_net_admin;
const std::string policy_ns = "net:[4026532001]";

std::string hex(std::uint64_t v) {
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(v));
    return buffer;
}

capability_fields sets(std::uint64_t inh, std::uint64_t prm, std::uint64_t eff, std::uint64_t bnd,
                       std::uint64_t amb) {
    return {{"CapInh", hex(inh)},
            {"CapPrm", hex(prm)},
            {"CapEff", hex(eff)},
            {"CapBnd", hex(bnd)},
            {"CapAmb", hex(amb)}};
}

std::string refusal_of(const capability_fields& caps, std::string_view subject_ns = policy_ns,
                       std::string_view policy = policy_ns) {
    const auto r = check_subject(caps, subject_ns, policy);
    return r ? std::string("admitted") : r.error().message;
}

TEST_CASE("C15: a constrained subject in the policy namespace is admitted") {
    CHECK(refusal_of(sets(0, constrained, constrained, constrained, 0)) == "admitted");
}

TEST_CASE("C11: a subject holding a bypass capability in every set never starts") {
    constexpr std::uint64_t sys_admin = std::uint64_t{1} << 21;
    CHECK(refusal_of(sets(cap_net_raw | sys_admin, cap_net_raw | sys_admin, cap_net_raw | sys_admin,
                          cap_net_raw | sys_admin, cap_net_raw | sys_admin)) ==
          "the subject holds NET_RAW, which bypasses the Eval egress policy; remove it from the task");
    CHECK(refusal_of(sets(cap_net_admin, cap_net_admin, cap_net_admin, cap_net_admin, cap_net_admin))
              .find("NET_ADMIN") != std::string::npos);
    CHECK(refusal_of(sets(0, cap_net_admin | cap_net_raw, 0, 0, 0))
              .starts_with("the subject holds NET_ADMIN, NET_RAW,"));
}

TEST_CASE("C12: a capability reachable only through the bounding set never starts") {
    CHECK(refusal_of(sets(0, 0, 0, constrained | cap_net_raw, 0)).find("NET_RAW") != std::string::npos);
}

TEST_CASE("the inheritable and ambient sets count too") {
    CHECK(refusal_of(sets(cap_net_raw, 0, 0, 0, 0)).find("NET_RAW") != std::string::npos);
    CHECK(refusal_of(sets(0, 0, 0, 0, cap_net_admin)).find("NET_ADMIN") != std::string::npos);
}

TEST_CASE("C13: a subject outside the policy namespace never starts") {
    CHECK(refusal_of(sets(0, constrained, constrained, constrained, 0), "net:[4026532099]")
              .find("network namespace") != std::string::npos);
}

TEST_CASE("C16/C17: unreadable evidence fails closed") {
    const auto caps = sets(0, constrained, constrained, constrained, 0);
    for (const char* value : {"", "shared", "net:[]"}) {
        CHECK(refusal_of(caps, value, value) == "Maka Eval could not read the subject isolation evidence");
    }
    CHECK(refusal_of({}) == "Maka Eval could not read the subject capability set");
    CHECK(refusal_of({{"CapEff", "0"}, {"CapPrm", "0"}}) ==
          "Maka Eval could not read the subject capability set");
    CHECK(refusal_of({{"CapEff", "zz"}, {"CapPrm", "0"}, {"CapBnd", "0"}}) ==
          "Maka Eval could not read the subject capability set");
}

TEST_CASE("order: unreadable namespace before capabilities, capabilities before a foreign namespace") {
    CHECK(refusal_of(sets(0, cap_net_raw, 0, 0, 0), "shared") ==
          "Maka Eval could not read the subject isolation evidence");
    CHECK(refusal_of(sets(0, cap_net_raw, 0, 0, 0), "net:[1]").find("NET_RAW") != std::string::npos);
}

TEST_CASE("probe lines: exactly one per prefix, value stripped") {
    CHECK(sole_probe_line("noise\nMAKA-EVAL-POLICY-NAMESPACE-V1 net:[1] \n", namespace_prefix) == "net:[1]");
    CHECK_FALSE(sole_probe_line("", namespace_prefix));
    CHECK_FALSE(sole_probe_line("MAKA-EVAL-POLICY-NAMESPACE-V1 a\nMAKA-EVAL-POLICY-NAMESPACE-V1 b\n",
                                namespace_prefix));
}

TEST_CASE("C22: the proxy host comes from the setting, falls back to the default, and is validated first") {
    CHECK(proxy_host_from(std::nullopt).value() == "maka-eval-mitmproxy");
    CHECK(proxy_host_from("").value() == "maka-eval-mitmproxy");
    CHECK(proxy_host_from("proxy.internal").value() == "proxy.internal");
    CHECK(proxy_host_from("foo..bar").error().message == "Eval egress proxy host is invalid");
}

TEST_CASE("C28: the pin report is re-validated") {
    CHECK(check_pinned("172.18.0.2", "maka-eval-mitmproxy", "maka-eval-mitmproxy"));
    CHECK(check_pinned("999.1.1.1", "maka-eval-mitmproxy", "maka-eval-mitmproxy").error().message ==
          "Maka Eval could not pin the Eval egress proxy hostname");
    CHECK_FALSE(check_pinned("172.18.0.2", "other", "maka-eval-mitmproxy"));
}

} // namespace
