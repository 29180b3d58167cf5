// `maka-eval-helper session`: the interactive relay session over stdin/stdout (NDJSON).
//
// Sends `hello` at once, waits for one `run`, supervises it (`started`, then `exited` or `settled`) and
// exits. stdout carries protocol lines only; logs go to stderr. A malformed line gets an `error` and the
// session goes on. stdin EOF before `run` ends the session quietly; during the run it settles the subject.
#include "contracts/secret.hpp"
#include "in_container/base/io.hpp"
#include "in_container/base/line_reader.hpp"
#include "in_container/base/signals.hpp"
#include "in_container/base/streamed_message.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/commands/command_options.hpp"
#include "in_container/process/identity.hpp"
#include "in_container/process/probe.hpp"
#include "in_container/process/root_state.hpp"
#include "in_container/process/spawn.hpp"
#include "in_container/supervision/supervisor.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

void emit(const contracts::session_message& message) {
    if (!write_all(STDOUT_FILENO, contracts::serialize(message))) {
        log_line(std::string("cannot write to the relay: ") + std::strerror(errno));
    }
}

// Reads control lines until a valid `run` arrives; nullopt when the relay leaves or we are told to stop.
std::optional<contracts::run_request> await_run(line_reader& control, int signal_fd) {
    streamed_message parsing; // the line being received, parsed as it comes
    while (true) {
        pollfd fds[2] = {{control.fd(), POLLIN, 0}, {signal_fd, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
            return std::nullopt;
        }
        if ((fds[1].revents & POLLIN) != 0) {
            for (const int sig : drain_signals(signal_fd)) {
                if (sig != SIGCHLD) {
                    return std::nullopt; // told to stop while nothing runs: nothing to settle
                }
            }
        }
        if (fds[0].revents == 0) {
            continue;
        }
        const auto filled = control.fill();
        while (true) {
            contracts::secret_text line; // wiped at the end of each turn: it may be a `run` request
            const auto popped = control.pop(line);
            if (popped == line_reader::pop_result::none) {
                parsing.received(control.partial_line());
                break;
            }
            if (popped == line_reader::pop_result::oversize) {
                parsing.reset();
                emit(contracts::error_message{contracts::helper_fault::bad_request,
                                              "session line exceeds the size limit"});
                continue;
            }
            auto message = parsing.complete(line.view());
            line.clear();
            if (!message) {
                emit(contracts::error_message{contracts::helper_fault::bad_request,
                                              message.error().message()});
            } else if (auto* run = std::get_if<contracts::run_request>(&*message)) {
                return std::move(*run);
            } else if (std::holds_alternative<contracts::cancel_request>(*message)) {
                emit(contracts::error_message{contracts::helper_fault::idle,
                                              "nothing is running in this session"});
            } else {
                emit(
                    contracts::error_message{contracts::helper_fault::bad_request, "expected a run request"});
            }
        }
        if (filled != line_reader::fill_result::data) {
            return std::nullopt;
        }
    }
}

} // namespace

int session_command(std::span<const std::string_view> args) {
    std::string user;
    // The interval is the relay's to rely on (three missed beats: a stopped supervisor); tests and people
    // watching by hand may shorten it. `hello` says which one is in force.
    std::int64_t heartbeat = contracts::session_heartbeat_ms;
    bool keep_leftovers = false;
    command_options options("session",
                            "usage: maka-eval-helper session [--user USER[:GROUP]] [--heartbeat-ms "
                            "50..60000] [--keep-leftovers]   (NDJSON on stdin/stdout)");
    options.text("--user", user)
        .number("--heartbeat-ms", heartbeat, 50, 60'000)
        .flag("--keep-leftovers", keep_leftovers);
    if (!options.parse(args) ||
        (options.given("--user") && user.empty() && !options.usage_error("--user is empty"))) {
        return exit_usage;
    }
    const auto heartbeat_ms = static_cast<std::uint32_t>(heartbeat);
    // What an earlier trial's subject left running is stopped (confirmed gone, not only signalled) before
    // `hello` tells the relay it may send `run`. (main() made us non-dumpable before anything else: opening
    // our stdin through /proc then needs CAP_SYS_PTRACE, which Docker does not give a root process by
    // default; the relay checks from the host that nobody opened it before.)
    if (!keep_leftovers && ::geteuid() == 0) {
        if (const auto state = root_state_directory()) {
            if (const auto stopped = stop_leftovers(*state); stopped.remaining > 0) {
                emit(contracts::error_message{
                    contracts::helper_fault::spawn_failed,
                    std::to_string(stopped.remaining) +
                        " process(es) an earlier trial's subject left running are still alive after SIGKILL "
                        "(uninterruptible?): nothing secret is taken in this environment until they are "
                        "gone"});
                return exit_failed;
            }
        }
    }
    const int signal_fd = take_signals();
    if (signal_fd < 0) {
        log_line(std::string("signalfd: ") + std::strerror(errno));
        return exit_failed;
    }
    // `hello` describes the subject as it will run: as USER when one is named (we are its root supervisor).
    std::optional<contracts::hello_message> hello;
    if (user.empty()) {
        hello = probe_self();
    } else if (auto identity = resolve_subject_user(user); !identity) {
        // The relay may then fall back to running the whole session as that user (same-uid mode).
        emit(contracts::error_message{contracts::helper_fault::identity_unavailable, identity.error()});
        return exit_failed;
    } else if (auto probed = probe_as(*identity); !probed) {
        emit(contracts::error_message{contracts::helper_fault::spawn_failed,
                                      "cannot take on the subject's identity " + user + " (uid " +
                                          std::to_string(identity->uid) + "): " + probed.error() +
                                          (privilege_limits().empty() ? "" : "; " + privilege_limits())});
        return exit_failed;
    } else {
        hello = std::move(*probed);
    }
    hello->heartbeat_ms = heartbeat_ms; // supervise() beats at this interval while the subject runs
    emit(*hello);
    // The subject's launcher, exec'd and started while the relay and the orchestrator exchange `ready` and
    // `execute` (spawn.hpp); killed and reaped on the way out if no `run` comes.
    auto launcher = standby_launcher::start();
    // Where our stdin is a pipe, as large as the system lets it be: a `run` request of megabytes
    // (credentials) then passes in few reads and the engine writing it is not held back by each.
    (void)::fcntl(STDIN_FILENO, F_SETPIPE_SZ, 1 << 20);
    line_reader control(STDIN_FILENO, contracts::session_line_limit_bytes);
    auto request = await_run(control, signal_fd);
    if (!request) {
        return exit_ok;
    }
    if (request->user.empty()) {
        request->user = user;
    }
    const supervisor_io io{signal_fd, &control, &emit, heartbeat_ms, &launcher};
    auto report = supervise(*request, io);
    if (!report) {
        emit(contracts::error_message{report.error().code, report.error().message});
        return exit_failed;
    }
    emit(*report);
    return exit_ok;
}

} // namespace maka_eval::in_container
