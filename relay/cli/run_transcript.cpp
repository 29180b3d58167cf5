// `run`'s closing print (see run_transcript.hpp).
#include "relay/cli/run_transcript.hpp"

#include "contracts/wire_json.hpp"
#include "relay/support/exit_codes.hpp"

namespace maka_eval::relay {

std::string_view exit_name(int code) {
    switch (code) {
    case exit_success:
        return "success";
    case exit_usage:
        return "usage";
    case exit_transport_lost:
        return "transport-lost";
    case exit_refused:
        return "refused";
    case exit_environment:
        return "environment";
    case exit_cancelled:
        return "cancelled";
    case exit_host_teardown:
        return "host-teardown";
    default:
        return "internal-error";
    }
}

std::int64_t run_summary::subject_code() const {
    return seen.executed && seen.executed->at("termination").as_string() == "exited"
               ? seen.executed->at("exitCode").as_int64()
               : 0;
}

int run_summary::exit_code() const {
    const int code = outcome.exit_code;
    return exit_with_subject && code == exit_success ? static_cast<int>(subject_code() & 0xFF) : code;
}

void print_json(std::ostream& out, const run_summary& summary) {
    const int code = summary.outcome.exit_code;
    boost::json::object object;
    object["ready"] = summary.seen.ready ? boost::json::value(*summary.seen.ready) : nullptr;
    object["executed"] = summary.seen.executed ? boost::json::value(*summary.seen.executed) : nullptr;
    object["exit"] = code;
    object["outcome"] = exit_name(code);
    object["artifacts"] = summary.artifacts;
    object["usage"] =
        summary.outcome.usage ? boost::json::value(contracts::to_json(*summary.outcome.usage)) : nullptr;
    if (!summary.seen.failure.empty()) {
        object["orchestrator"] = summary.seen.failure;
    }
    if (code != exit_success && !summary.outcome.message.empty()) {
        object["error"] = summary.outcome.message; // what the log said, for whoever reads only the object
    }
    if (!summary.outcome.stderr_tail.empty()) {
        object["stderrTail"] = summary.outcome.stderr_tail;
    }
    if (!summary.outcome.trusted_reuse.empty()) {
        object["trustedReusedContainer"] =
            summary.outcome.trusted_reuse; // --trust-reused-container took effect
    }
    if (!summary.attestation.empty()) {
        object["attestation"] =
            contracts::parse_object(summary.attestation, summary.attestation.size()).value();
    }
    out << contracts::to_wire(object) << "\n";
}

namespace {

// The end of the subject's stderr, each line after the first indented under the first.
std::string indented_tail(std::string tail) {
    while (!tail.empty() && tail.back() == '\n') {
        tail.pop_back();
    }
    std::string indented;
    for (const char ch : tail) {
        indented += ch;
        if (ch == '\n') {
            indented += "            ";
        }
    }
    return indented;
}

} // namespace

void print_text(std::ostream& out, const run_summary& summary) {
    const auto& seen = summary.seen;
    const auto& outcome = summary.outcome;
    if (seen.ready) {
        out << "ready       cwd " << seen.ready->at("cwd").as_string().c_str() << "\n";
    }
    if (seen.executed) {
        const auto& e = *seen.executed;
        out << "executed    " << e.at("termination").as_string().c_str() << ", exit code "
            << e.at("exitCode").as_int64() << "\n"
            << "frame       " << contracts::to_wire(e.at("stdout"))
            << " (the decoded result frame; what the subject printed is in the artifacts)\n"
            << "diagnostic  " << contracts::to_wire(e.at("diagnostic")) << "\n";
        if (summary.subject_code() != 0 && !outcome.stderr_tail.empty()) {
            // Why it failed, without opening the artifacts.
            out << "stderr      " << indented_tail(outcome.stderr_tail) << "\n";
        }
    } else {
        out << "executed    (none" << (seen.failure.empty() ? "" : ": " + seen.failure) << ")\n";
    }
    if (outcome.usage) {
        const auto& u = *outcome.usage;
        out << "usage       cpu " << u.user_ms << " ms user + " << u.system_ms << " ms sys, peak RSS "
            << u.peak_rss_kib << " KiB, " << u.processes << (u.processes == 1 ? " process, " : " processes, ")
            << u.wall_ms << " ms wall\n";
    }
    const int code = summary.exit_code();
    out << "artifacts   " << summary.artifacts << (summary.removed ? "" : " (kept)") << "\n";
    if (!summary.attestation_path.empty() && !summary.attestation.empty()) {
        out << "attestation " << summary.attestation_path
            << " (signed; maka-eval-relay verify --key PUB.pem checks it)\n";
    }
    out << "relay exit  " << code << " ("
        << (code == outcome.exit_code ? std::string(exit_name(code)) : std::string("the subject's exit code"))
        << (code == exit_cancelled && !outcome.message.empty() ? ": " + outcome.message : std::string())
        << ")\n";
}

} // namespace maka_eval::relay
