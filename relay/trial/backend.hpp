// How the relay reaches the environment the subject runs in.
//
// One interface for every backend: an interactive helper session (stdin/stdout, with stdin's EOF as the
// helper's dead-man switch), a helper subcommand as root (pin-proxy), the policy sidecar's network
// namespace, paths inside the environment, and destroy as the last resort. `local` runs the helper as a
// child of the relay on this host; `docker` and `bridge` implement the same calls through the Engine API
// and the trial runner's environment object (relay/backends/, which the trial does not depend on).
#pragma once

#include "relay/support/error.hpp"
#include "relay/support/relay_clock.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::relay {

namespace asio = boost::asio;

struct exec_output {
    int exit_code = -1;
    std::string out;
    std::string err;
};

class helper_session {
  public:
    virtual ~helper_session() = default;
    // Writes one line (ending in "\n"); false when the helper's stdin is gone.
    virtual asio::awaitable<bool> send(std::string line) = 0;
    // The next stdout line, without "\n"; nullopt at EOF, on error, or past the session line limit.
    virtual asio::awaitable<std::optional<std::string>> receive() = 0;
    // The next `size` raw bytes of stdout (what an `output` line says follows it); nullopt at EOF or on
    // error.
    virtual asio::awaitable<std::optional<std::string>> receive_bytes(std::size_t size) = 0;
    // EOF on the helper's stdin: it settles a running subject and exits.
    virtual void close_input() = 0;
    // Ends the helper at once (destroy path).
    virtual void kill() = 0;
};

// After the helper vanished without a report: what became of the subject.
enum class recovery {
    settled,            // a fresh cancel stopped what was left (or nothing was left)
    environment_gone,   // the environment no longer runs (stopped or removed from outside): nothing to stop
    out_of_memory,      // the environment no longer runs, and its engine says the kernel killed it for memory
    restarted,          // the environment was restarted from outside: the subject's processes ended with it
    paused,             // the environment is paused from outside and stayed so: frozen, left as it is
    engine_unreachable, // the engine did not answer within the budget: the subject's state is unknown
    failed,             // could not be settled: destroy is what remains
};

// When a recovery must be over (relay/trial/teardown_budget.hpp): what acts on the environment (a cancel,
// the helper's refresh) by `settle_by`, so that a destroy still has its reserve; watching a stopped container
// for a restart, which destroys nothing, may go on until `watch_until`.
struct recovery_window {
    relay_clock::time_point settle_by;
    relay_clock::time_point watch_until;
    // What is left until settle_by (at least 1 ms: a usable timeout).
    [[nodiscard]] std::chrono::milliseconds settle_left() const { return left_until(settle_by); }
};

// A fault from outside the subject that the environment's host can see (docker: the engine's inspect).
struct outside_fault {
    bool frozen = false; // paused: its processes are frozen, not gone, and may be resumed
    std::string message; // what happened, naming the evidence
};

// What a signed result says of the environment (relay/attest/): the backend, on docker the container, its
// image and the engine's endpoint, and the SHA-256 of the helper copy that ran where the relay knows it
// (empty: one the user mounted, which the relay did not check).
struct environment_facts {
    std::string backend;
    std::string container_id;
    std::string image_id;
    std::string engine;
    std::string helper_sha256;
};

class backend {
  public:
    virtual ~backend() = default;
    [[nodiscard]] virtual std::string describe() const = 0;
    // Asked after the trial, only for a signed result (so a local helper is hashed only then).
    [[nodiscard]] virtual environment_facts facts() const { return {}; }
    virtual asio::awaitable<boost::system::result<std::unique_ptr<helper_session>, relay_error>>
    open_session() = 0;
    // `runs_for`: how long the command itself may take (a cancel's grace); the backend's own deadlines for
    // reaching the environment come on top.
    virtual asio::awaitable<boost::system::result<exec_output, relay_error>>
    run_helper_as_root(std::vector<std::string> args, std::chrono::milliseconds runs_for) = 0;
    // `readlink /proc/self/ns/net` as seen by the service that applies the egress policy.
    virtual asio::awaitable<boost::system::result<std::string, relay_error>>
    policy_namespace(std::string sidecar) = 0;
    // Last resort when settling failed: stop everything of this trial (local: the helper and the subject's
    // process group; docker: kill and remove the container). Bounded by `budget`.
    virtual asio::awaitable<void> destroy(std::optional<int> subject_pgid,
                                          std::chrono::milliseconds budget) = 0;
    // The helper vanished (killed, or its exec ended) while the subject ran: settle the scope recorded at
    // `scope` without it, within `window`.
    virtual asio::awaitable<recovery> recover(std::optional<int> subject_pgid, std::string scope,
                                              recovery_window window) = 0;
    [[nodiscard]] virtual std::string scope_path(const std::string& name) const = 0;
    [[nodiscard]] virtual std::string artifacts_dir() const = 0;
    // Whether something outside the subject explains a silent or vanished supervisor (the container paused,
    // restarted, stopped, out of memory, removed; the engine unreachable). Asked before the relay acts on
    // the silence, and before it destroys: a paused container is waited for, never destroyed for being
    // paused. nullopt: nothing outside explains it (or this backend cannot tell).
    virtual asio::awaitable<std::optional<outside_fault>> diagnose_outside() { co_return std::nullopt; }
    // Why the helper supervises as the subject's own user rather than as root, when a root exec was tried
    // and refused (docker: the container's capabilities or no-new-privileges); empty otherwise. Said in the
    // log, and beside any failure that a root helper would not have had.
    [[nodiscard]] virtual std::string not_root_because() const { return {}; }
    // Whose the environment is, for a trial that brings secrets: which earlier trial's subject ran as root
    // there ("owned by a root subject (…)"), or that an earlier trial ran there that this host has no record
    // of; empty when neither is known (a fresh container, or one only non-root subjects used).
    [[nodiscard]] virtual std::string earlier_owner() const { return {}; }
    // Why the helper's session may have another reader than this build's helper (docker: a process of the
    // container holding its stdin, a forgery that said hello): nothing secret may be sent then. Asked once,
    // after `ready` is out and before `run`, so that it runs while the orchestrator answers; nullopt: none
    // found, or this backend cannot tell.
    [[nodiscard]] virtual std::optional<std::string> reader_refusal() { return std::nullopt; }
    // This trial's subject will run as root or with capabilities (`why`): from now on the environment is its.
    virtual void mark_owned_by_subject(const std::string& why) { (void)why; }
    // Engine API calls made so far, where there is an engine (the benchmark reports it per trial).
    [[nodiscard]] virtual std::optional<unsigned> engine_calls() const { return std::nullopt; }
    // True for the local backend: the "environment" is this host, shared with everything else on it.
    [[nodiscard]] virtual bool is_host() const { return false; }
    // Whether the helper's messages arrive while the subject runs (a live session), so that its output can
    // be followed; false on the bridge, whose runner returns an exec's output only when it ends.
    [[nodiscard]] virtual bool streams_live() const { return true; }
    // The trial is over: calls still in flight on its behalf (a cancel the runner has not answered) are
    // given up at once, so that nothing holds the relay past the teardown budget.
    virtual void abandon_pending() {}

  protected:
    // `maka-eval-helper cancel` through run_helper_as_root: the settle of a scope whose supervisor is gone.
    asio::awaitable<recovery> cancel_as_root(std::string scope, std::chrono::milliseconds budget);
};

} // namespace maka_eval::relay
