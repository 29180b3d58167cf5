// `maka-eval-helper cancel --scope FILE [--grace-ms N] [--run-request PATH]`: have the supervisor named by a
// scope file settle.
//
// Signals the supervisor (SIGTERM, through a pidfd after checking its start time, so never a process that
// reused its pid) and waits until it has exited — it exits only once the scope is quiet. Without a live
// supervisor (it was killed), falls back to TERM then KILL on every process of the recorded group or
// session that started no earlier than the recorded leader. A supervisor that is stopped (SIGSTOP from a
// subject that may signal it) is killed and the scope settled here instead. As root, FILE names the record
// by its base name inside the root-only state directory. With --run-request (the bridge's `run --request
// PATH`), the supervisor is found by what a subject cannot change or delete: the earliest-started live
// process whose command line is `… run --request PATH` (a copy a subject starts later is younger) — so a
// root subject that deleted or rewrote the scope file is still settled. Prints one JSON object.
// Exit: 0 settled, 3 nothing was running, 1 did not settle within the grace, 2 usage.
#include "contracts/defaults.hpp"
#include "contracts/teardown_budget.hpp"
#include "contracts/wire_json.hpp"
#include "in_container/base/io.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/commands/command_options.hpp"
#include "in_container/process/process_table.hpp"
#include "in_container/process/root_state.hpp"
#include "in_container/process/scope_file.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <limits>
#include <optional>
#include <poll.h>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace maka_eval::in_container {
namespace {

using clock_type = std::chrono::steady_clock;
constexpr int exit_not_running = 3;

int finish(std::string_view outcome, clock_type::time_point begun, int code) {
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - begun).count();
    const boost::json::object out{{"outcome", outcome}, {"waitedMs", waited}};
    (void)write_all(STDOUT_FILENO, contracts::to_wire(out) + "\n");
    return code;
}

// The scope's processes /proc still shows alive: its group, and its session (which a subject's own
// process groups stay in). Only processes started no earlier than the recorded leader count: a group or
// session id is a pid, and pids are reused.
std::vector<process_status> scope_members(const scope_record& record) {
    std::vector<process_status> out;
    for (const auto& p : all_processes()) {
        if ((p.pgid == record.pgid || p.sid == record.pgid) && p.start_time >= record.leader_start &&
            is_live(p) && p.pid != ::getpid()) {
            out.push_back(p);
        }
    }
    return out;
}

// The supervisor of the bridge run whose request file is `request` (see the top of this file).
std::optional<process_status> supervisor_of_run(std::string_view request) {
    std::optional<process_status> found;
    for (const auto& p : all_processes()) {
        if (!is_live(p) || p.pid == ::getpid() || (found && p.start_time >= found->start_time)) {
            continue;
        }
        const auto text = read_file("/proc/" + std::to_string(p.pid) + "/cmdline", 8192);
        if (!text) {
            continue;
        }
        std::vector<std::string_view> argv;
        for (std::string_view rest(*text); !rest.empty();) {
            const auto end = rest.find('\0');
            argv.push_back(rest.substr(0, end));
            rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        }
        if (argv.size() == 4 && argv[1] == "run" && argv[2] == "--request" && argv[3] == request) {
            found = p;
        }
    }
    return found;
}

void signal_members(const std::vector<process_status>& members, int sig) {
    for (const auto& p : members) {
        (void)signal_exact(p, sig);
    }
}

// What is left until `deadline`, as poll(2) takes it (0 once it has passed).
int ms_until(clock_type::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    return static_cast<int>(std::clamp<long long>(left.count(), 0, std::numeric_limits<int>::max()));
}

} // namespace

int cancel_command(std::span<const std::string_view> args) {
    std::string scope;
    std::string run_request;
    std::int64_t grace_ms = contracts::defaults::cancel_grace_ms;
    command_options options(
        "cancel", "usage: maka-eval-helper cancel --scope FILE [--grace-ms N] [--run-request PATH]");
    options.text("--scope", scope)
        .text("--run-request", run_request)
        .number("--grace-ms", grace_ms, 0, 86'400'000);
    if (!options.parse(args) || (scope.empty() && !options.usage_error("--scope FILE is required"))) {
        return exit_usage;
    }
    const auto begun = clock_type::now();
    const auto deadline = begun + std::chrono::milliseconds(grace_ms);
    // As root the record lives in the root-only state directory, where the subject could not touch it.
    const auto text = read_file(find_scope(scope), 4096);
    const auto record = text ? parse_scope(*text) : std::nullopt;
    const auto run = run_request.empty() ? std::nullopt : supervisor_of_run(run_request);
    if (!record && !run) {
        return finish("not-running", begun, exit_not_running);
    }
    // One look at the supervisor: whether it is the one recorded (or the run's), alive, and not stopped.
    const auto supervisor = run ? pinned_process::pin(run->pid, run->start_time)
                                : pinned_process::pin(record->supervisor, record->supervisor_start);
    if (supervisor) {
        const char state = supervisor->status().state;
        if (state != 'T' && state != 't') {
            supervisor->signal(SIGTERM);
            while (true) {
                pollfd fd{supervisor->fd(), POLLIN, 0};
                const int ready = ::poll(&fd, 1, ms_until(deadline));
                if (ready < 0 && errno == EINTR) {
                    continue;
                }
                return ready > 0 ? finish("settled", begun, exit_ok) : finish("timeout", begun, exit_failed);
            }
        }
        // Stopped (by a subject that could signal it): it cannot settle anything. It goes, and we settle.
        log_line("cancel: the supervisor is stopped; killing it and settling its scope here");
        supervisor->signal(SIGKILL);
        pollfd fd{supervisor->fd(), POLLIN, 0};
        (void)::poll(&fd, 1, ms_until(deadline));
    }
    // No supervisor: what remains of the scope is what shares its group or session.
    if (!record) {
        return finish("not-running", begun, exit_not_running); // nothing left that says what the scope was
    }
    auto members = scope_members(*record);
    if (members.empty()) {
        return finish("not-running", begun, exit_not_running);
    }
    log_line("cancel: the supervisor is gone; signalling the scope of process group " +
             std::to_string(record->pgid));
    const auto term_until = begun + contracts::cancel_term_share(std::chrono::milliseconds(grace_ms));
    for (const auto& [sig, until] : {std::pair{SIGTERM, term_until}, std::pair{SIGKILL, deadline}}) {
        signal_members(members, sig);
        // Not our children, so no pidfd or waitpid tells us: check /proc at a short interval, bounded.
        while (!(members = scope_members(*record)).empty() && clock_type::now() < until) {
            signal_members(members, sig); // what forked meanwhile
            ::poll(nullptr, 0, 20);
        }
        if (members.empty()) {
            return finish("settled-without-supervisor", begun, exit_ok);
        }
    }
    return finish("timeout", begun, exit_failed);
}

} // namespace maka_eval::in_container
