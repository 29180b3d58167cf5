// What gating and starting work out before they act (trial_machine.hpp): the egress judgement (the
// sidecar's namespace, the subject's evidence, the proxy pin), and where `run` puts the subject's files and
// how long its graces may be within the teardown budget.
#include "contracts/digest.hpp"
#include "policy/egress_gate.hpp"
#include "relay/trial/trial_machine.hpp"

namespace maka_eval::relay::detail {

asio::awaitable<std::optional<std::string>> trial::judge_egress() {
    std::string sidecar = config_.policy_sidecar;
    auto policy_ns = co_await env_.policy_namespace(std::move(sidecar));
    if (!policy_ns) {
        log_.error(policy_ns.error().message);
        co_return policy::make_refusal(policy::gate_error::evidence_unreadable).message;
    }
    if (auto admitted = policy::check_subject(hello_->capabilities, hello_->net_namespace, *policy_ns);
        !admitted) {
        co_return admitted.error().message;
    }
    auto host = policy::proxy_host_from(config_.egress_host);
    if (!host) {
        co_return host.error().message;
    }
    std::vector<std::string> pin_args{"pin-proxy", "--host", *host}; // not braced in co_await: GCC 12
    auto pinned = co_await env_.run_helper_as_root(std::move(pin_args), milliseconds(0));
    const auto refused = policy::make_refusal(policy::gate_error::pin_failed).message;
    if (!pinned || pinned->exit_code != 0) {
        log_.error(pinned ? pinned->err : pinned.error().message);
        co_return refused;
    }
    auto message = contracts::parse_session_message(pinned->out);
    const auto* pin = message ? std::get_if<contracts::pinned_message>(&*message) : nullptr;
    if (pin == nullptr || !policy::check_pinned(pin->ip, pin->host, *host)) {
        co_return refused;
    }
    log_.phase("egress-gate", {{"proxy", pin->host + "=" + pin->ip}});
    co_return std::nullopt;
}

run_placement trial::place_run() {
    run_placement placement;
    if (config_.follow != nullptr) {
        placement.follow = env_.streams_live();
        if (!*placement.follow) {
            log_.error("follow: not available on the " + env_.describe() +
                       " backend (its runner returns output only when the exec ends); the output is in the "
                       "artifacts afterwards");
        }
    }
    // The scope file's name derives from the relay token without revealing it to the subject.
    placement.scope_path = env_.scope_path(contracts::sha256_hex(config_.token).substr(0, 24));
    placement.artifacts_dir = env_.artifacts_dir();
    placement.on_host = env_.is_host();
    scope_path_ = placement.scope_path;
    return placement;
}

settle_graces trial::fit_graces_to_budget() {
    // Fitted now, so that the helper's settle (also the one the dead-man switch or a root cancel starts)
    // ends within the budget.
    auto fitted = fit_graces(config_.teardown_budget, config_.graces);
    if (fitted != config_.graces) {
        log_.phase("graces", {{"termGraceMs", std::to_string(fitted.term.count())},
                              {"killGraceMs", std::to_string(fitted.kill.count())},
                              {"drainMs", std::to_string(fitted.drain.count())},
                              {"teardownTimeoutMs", std::to_string(config_.teardown_budget.count())},
                              {"why", "fitted inside the teardown budget (configured TERM " +
                                          std::to_string(config_.graces.term.count()) + " ms, KILL " +
                                          std::to_string(config_.graces.kill.count()) + " ms)"}});
    }
    term_grace_ = fitted.term;
    return fitted;
}

} // namespace maka_eval::relay::detail
