// What the trial records of its subject and logs of the helper's report (trial_machine.hpp): the names a
// signed result gives (never a value), the phase lines of how the subject ended and what it used, and the
// outcome the trial hands back with its closing lines.
#include "contracts/digest.hpp"
#include "contracts/limits.hpp"
#include "contracts/name_table.hpp"
#include "contracts/proc_status.hpp"
#include "contracts/wire_json.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/support/utc_time.hpp"
#include "relay/trial/trial_machine.hpp"

#include <boost/json/array.hpp>

namespace maka_eval::relay {

namespace {

constexpr contracts::name_table<trial_phase, 11> phase_names{{
    {trial_phase::connecting, "connecting"},
    {trial_phase::opening_session, "opening-session"},
    {trial_phase::gating, "gating"},
    {trial_phase::offering, "offering"},
    {trial_phase::starting, "starting"},
    {trial_phase::supervising, "supervising"},
    {trial_phase::settling, "settling"},
    {trial_phase::recovering, "recovering"},
    {trial_phase::reporting, "reporting"},
    {trial_phase::lingering, "lingering"},
    {trial_phase::done, "done"},
}};

} // namespace

std::string_view to_string(trial_phase phase) {
    return contracts::name_in(phase_names, phase, "unknown");
}

} // namespace maka_eval::relay

namespace maka_eval::relay::detail {

trial_outcome trial::conclude() {
    auto result = std::move(outcome_);
    if (record_.ending.empty()) {
        record_.ending = pgid_ ? "failed" : "refused"; // no report: a subject that never started, or lost
    }
    record_.finished_on = rfc3339_now();
    result.record = std::move(record_);
    result.usage = usage_;
    result.stderr_tail = stderr_tail_;
    result.trusted_reuse = trusted_reuse_;
    finish();
    if (config_.follow != nullptr) {
        config_.follow->finish();
    }
    // How it ended, before the closing line.
    if (result.exit_code == exit_cancelled || result.exit_code == exit_host_teardown) {
        log_.phase("cancelled", {{"reason", result.message}});
    } else if (!result.message.empty()) {
        log_.error(result.message);
    }
    const auto calls = env_.engine_calls();
    log_.phase("done", {{"peakRssKiB", std::to_string(contracts::peak_rss_kib())},
                        {"engineCalls", calls ? std::to_string(*calls) : std::string("-")}});
    return result;
}

// The subject's report: how it ended, what it consumed (kept for `run`; the orchestrator never sees it),
// how many secret values were masked (never which), what was cut at the artifact limit.
void trial::record_subject(const contracts::execute_request& request) {
    record_.argv_sha256 = contracts::sha256_hex(
        contracts::to_wire(boost::json::array(request.argv.begin(), request.argv.end())));
    for (const auto* names : {&request.environment, &config_.task_environment}) {
        for (const auto& [name, value] : *names) {
            record_.environment_names.push_back(name);
        }
    }
    for (const auto& [name, value] : request.credentials) {
        record_.credential_names.push_back(name);
    }
}

void trial::log_report(bool settling, const contracts::report_message& report) {
    record_.ending = report.settled ? "settled" : "completed";
    record_.receipt = report.receipt;
    if (!settling) {
        log_.phase("exited", {{"exitCode", std::to_string(report.exit_code)},
                              {"diagnostic", std::string(contracts::to_string(report.diagnostic.kind))},
                              {"helperPeakRssKiB", std::to_string(report.peak_rss_kib)}});
    } else {
        log_.phase(report.settled ? "settled" : "exited",
                   {{"exitCode", std::to_string(report.exit_code)},
                    {"signalled", std::to_string(report.signalled)},
                    {"settleMs", std::to_string(report.settle_ms)},
                    {"helperPeakRssKiB", std::to_string(report.peak_rss_kib)}});
    }
    stderr_tail_ = report.stderr_tail;
    if (report.usage) {
        usage_ = report.usage;
        log_.phase("usage", {{"userMs", std::to_string(usage_->user_ms)},
                             {"systemMs", std::to_string(usage_->system_ms)},
                             {"peakRssKiB", std::to_string(usage_->peak_rss_kib)},
                             {"processes", std::to_string(usage_->processes)},
                             {"wallMs", std::to_string(usage_->wall_ms)}});
        if (usage_->processes_lower_bound) {
            log_.phase("usage-census",
                       {{"message",
                         "the subject's processes were counted by a census of its tree every " +
                             std::to_string(contracts::subject_usage::census_interval_ms) +
                             " ms, a lower bound (the kernel's fork events need CAP_NET_ADMIN in the host's "
                             "network namespace)"}});
        }
    }
    if (report.stdout_artifact.masked + report.stderr_artifact.masked > 0) {
        log_.phase("masked", {{"stdout", std::to_string(report.stdout_artifact.masked)},
                              {"stderr", std::to_string(report.stderr_artifact.masked)}});
    }
    for (const auto* artifact : {&report.stdout_artifact, &report.stderr_artifact}) {
        if (artifact->truncated && !settling) {
            log_.error(artifact->path +
                       " was cut at the artifact limit: " + std::to_string(artifact->written) + " of " +
                       std::to_string(artifact->bytes) + " bytes kept (sha256 covers them all)");
        }
    }
}

// Why the supervisor vanished: the engine's evidence (an OOM kill) where the environment runs as it did,
// else the trial's own guess.
asio::awaitable<std::string> trial::what_vanished(recovery outcome) {
    if (outcome == recovery::settled || outcome == recovery::failed) {
        const auto fault = co_await env_.diagnose_outside();
        if (fault) {
            co_return "vanished: " + fault->message;
        }
    }
    co_return vanished_;
}

// A root supervisor publishes the artifacts only at the end: the one that vanished left them staged.
std::string trial::staged_note() const {
    if (!root_helper_ || !pgid_) {
        return {};
    }
    return "; what the subject wrote so far is in " + env_.artifacts_dir() + "/" +
           std::string(contracts::staging_directory_prefix) + "* (never published)";
}

} // namespace maka_eval::relay::detail
