// The trial's phases (trial.hpp names them; trial_machine.hpp says how they run). Each phase is one row of
// `rows` below: its work on entry, its reaction to every event while it waits, and to its deadline. One loop
// (run) drives them: it enters a phase, waits for the next event or the phase's deadline, and hands it to
// that phase alone, which names the phase that follows. Read top to bottom, the phases come in their order.
#include "relay/trial/trial.hpp"

#include "contracts/limits.hpp"
#include "contracts/orchestrator_messages.hpp"
#include "contracts/session_messages.hpp"
#include "contracts/wire_json.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/support/tcp_endpoints.hpp"
#include "relay/support/utc_time.hpp"
#include "relay/trial/recovery_report.hpp"
#include "relay/trial/subject_request.hpp"
#include "relay/trial/trial_machine.hpp"

#include <algorithm>
#include <array>
#include <csignal>
#include <cstddef>

#include <boost/asio/connect.hpp>
#include <boost/asio/this_coro.hpp>

namespace maka_eval::relay {

namespace detail {

using asio::as_tuple;
using asio::use_awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto connect_timeout = milliseconds(30'000);
constexpr auto hello_timeout = milliseconds(120'000);
// After `executed` on the cancellation path the original closed within about a second (its cleanup exec);
// closing sooner could make the orchestrator's `verify` meet a closed socket.
constexpr auto linger_after_cancel = milliseconds(1'000);

bool from_orchestrator(const event& e) {
    return e.what == event::kind::orchestrator_line || e.what == event::kind::orchestrator_closed ||
           e.what == event::kind::orchestrator_bad;
}

} // namespace

// One row per phase, in trial_phase's order. A phase that never waits (its entry names the next) has no
// reaction and no deadline.
const trial::phase_row& trial::row_of(trial_phase phase) {
    static const std::array<phase_row, 11> rows{{
        {&trial::connect, nullptr, nullptr, &trial::no_deadline}, // connecting
        {&trial::open_session, &trial::on_opening, &trial::hello_missing, &trial::hello_deadline},
        {&trial::gate, nullptr, nullptr, &trial::no_deadline},              // gating
        {&trial::offer, &trial::on_offering, nullptr, &trial::no_deadline}, // offering
        {&trial::start, nullptr, nullptr, &trial::no_deadline},             // starting
        {&trial::just_wait, &trial::on_supervising, &trial::on_silence, &trial::heartbeat_deadline},
        {&trial::settle, &trial::on_settling, &trial::settle_failed, &trial::settle_deadline},
        {&trial::recover, nullptr, nullptr, &trial::no_deadline},                // recovering
        {&trial::just_wait, &trial::on_reporting, nullptr, &trial::no_deadline}, // reporting
        {&trial::linger, &trial::on_lingering, &trial::linger_over, &trial::linger_deadline},
        {&trial::just_wait, nullptr, nullptr, &trial::no_deadline}, // done
    }};
    return rows.at(static_cast<std::size_t>(phase));
}

asio::awaitable<trial_outcome> trial::run() {
    record_.started_on = rfc3339_now();
    spawn(watch_signals());
    if (config_.time_limit) {
        spawn(watch_time_limit());
    }
    if (config_.terminal_fd >= 0) {
        window_.add(SIGWINCH);
        spawn(watch_window());
    }
    // The one loop: enter a phase, then hand it each event (or its deadline) until it names another.
    std::optional<trial_phase> entered;
    while (phase_ != trial_phase::done) {
        const phase_row& row = row_of(phase_);
        if (entered != phase_) {
            entered = phase_;
            phase_ = co_await (this->*row.enter)();
            continue;
        }
        if (row.react == nullptr) {
            phase_ = end(exit_internal, "phase " + std::string(to_string(phase_)) + " waits for nothing");
            continue;
        }
        auto e = co_await events_.next((this->*row.deadline)());
        if (e) {
            phase_ = co_await (this->*row.react)(*e);
        } else if (!events_.is_open()) {
            phase_ = end(exit_internal, "event channel closed");
        } else if (row.expired != nullptr) {
            phase_ = co_await (this->*row.expired)();
        }
    }
    co_return conclude();
}

asio::awaitable<trial_phase> trial::just_wait() {
    co_return phase_;
}

trial_phase trial::cancelled_before_start(int signal) {
    return end(signal == SIGINT ? exit_host_teardown : exit_cancelled,
               signal == SIGINT ? "host teardown before the subject started"
                                : "cancelled before the subject started");
}

// connecting: first, before any environment work, as the original does.
asio::awaitable<trial_phase> trial::connect() {
    // GCC 12 destroys temporaries inside a co_await operand twice: every such argument is a named local.
    const std::string service = std::to_string(config_.port);
    const std::string host = config_.host;
    auto resolved = co_await tcp_endpoints(executor_, host, service);
    if (!resolved) {
        co_return end(exit_transport_lost,
                      "cannot resolve the orchestrator " + config_.host + ": " + resolved.error().message());
    }
    const auto& endpoints = *resolved;
    relay_timer connect_timer(executor_, connect_timeout);
    auto connected = co_await (asio::async_connect(socket_, endpoints, as_tuple(use_awaitable)) ||
                               connect_timer.async_wait(as_tuple(use_awaitable)) ||
                               stop_latch_.async_wait(as_tuple(use_awaitable)));
    if (connected.index() == 2) {
        co_return cancelled_before_start(first_signal_);
    }
    if (connected.index() == 1 || std::get<0>(std::get<0>(connected))) {
        co_return end(exit_transport_lost, "cannot connect to the orchestrator at " + config_.host + ":" +
                                               std::to_string(config_.port));
    }
    log_.phase("connected", {{"backend", env_.describe()}});
    co_return trial_phase::opening_session;
}

// opening_session: the helper's `hello` gives the working directory and the isolation evidence.
asio::awaitable<trial_phase> trial::open_session() {
    auto session = co_await unless_signalled(env_.open_session());
    if (!session) {
        co_return cancelled_before_start(first_signal_);
    }
    if (!*session) {
        co_return end(exit_environment, session->error().message);
    }
    session_ = std::move(**session);
    spawn(read_helper());
    hello_deadline_ = clock_type::now() + hello_timeout;
    co_return trial_phase::opening_session;
}

asio::awaitable<trial_phase> trial::on_opening(event& e) {
    if (e.what == event::kind::signal) {
        co_return cancelled_before_start(e.signal);
    }
    if (e.what == event::kind::helper_closed) {
        co_return co_await hello_missing();
    }
    const auto* hello =
        e.what == event::kind::helper_message ? std::get_if<contracts::hello_message>(&e.message) : nullptr;
    if (hello == nullptr) {
        co_return trial_phase::opening_session;
    }
    hello_ = *hello;
    record_.helper_version = hello->helper_version;
    record_.uid = hello->uid;
    record_.gid = hello->gid;
    record_.cwd = hello->cwd;
    if (!hello_->cwd.starts_with("/") || hello_->cwd.find('\0') != std::string::npos) {
        co_return end(exit_environment, "Maka Eval could not resolve the task working directory");
    }
    heartbeat_ = milliseconds(hello_->heartbeat_ms);
    root_helper_ = hello_->supervisor_uid == 0;
    subject_owns_because_ = owning_power(*hello_);
    // "notRootBecause": why a root supervisor was refused here (the container's capabilities), if it was.
    log_.phase("helper", {{"cwd", hello_->cwd},
                          {"helper", hello_->helper_version},
                          {"subjectUid", std::to_string(hello_->uid)},
                          {"supervisor", std::string(supervision(*hello_))},
                          {"notRootBecause", env_.not_root_because()}});
    co_return config_.egress_required ? trial_phase::gating : trial_phase::offering;
}

asio::awaitable<trial_phase> trial::hello_missing() {
    co_return end(exit_environment,
                  "Maka Eval could not resolve the task working directory (the helper did not answer)");
}

// gating: the sidecar's namespace, then the judgement (capabilities before namespaces), then the pin;
// before `ready`, so that a refusal means the orchestrator never sees `ready`. A signal ends it at once.
asio::awaitable<trial_phase> trial::gate() {
    auto refusal = co_await unless_signalled(judge_egress());
    if (!refusal) {
        co_return cancelled_before_start(first_signal_);
    }
    if (*refusal) {
        co_return end(exit_environment, **refusal);
    }
    co_return trial_phase::offering;
}

// offering: `ready`, then one `execute`, validated in the original's order.
asio::awaitable<trial_phase> trial::offer() {
    std::string ready =
        contracts::serialize(contracts::ready_message{config_.token, config_.instruction, hello_->cwd});
    // co_await only as a statement of its own: GCC 12 miscompiles it inside conditions.
    const bool ready_sent = co_await send_orchestrator(std::move(ready));
    if (!ready_sent) {
        co_return end(exit_transport_lost, "Maka Eval relay transport closed before ready");
    }
    log_.phase("ready");
    spawn(read_orchestrator());
    // While the orchestrator answers `ready`: the session's reader, checked before anything secret goes
    // out (`run`), off the path to `execute` (a pass over the host's /proc, most of a millisecond).
    if (auto refusal = env_.reader_refusal()) {
        co_return end(exit_environment, *refusal);
    }
    co_return trial_phase::offering;
}

asio::awaitable<trial_phase> trial::on_offering(event& e) {
    switch (e.what) {
    case event::kind::signal:
        co_return cancelled_before_start(e.signal);
    case event::kind::orchestrator_bad:
        co_return end(exit_transport_lost, "Maka Eval relay message was unavailable: " + e.text);
    case event::kind::orchestrator_closed:
        co_return end(exit_transport_lost, "the orchestrator closed before execute");
    case event::kind::helper_closed:
        co_return end(exit_environment, "the helper session ended before execute");
    case event::kind::orchestrator_line:
        break;
    default:
        co_return trial_phase::offering; // the subject is not there yet to take input or a size
    }
    auto message = orchestrator_message(e.text, "execute");
    auto* object = std::get_if<boost::json::object>(&message);
    if (object == nullptr) {
        co_return std::get<trial_phase>(message);
    }
    auto request = contracts::validate_execute(*object);
    object->clear();
    if (!request) {
        co_return end(exit_refused, request.error().message());
    }
    log_.phase("execute", {{"argc", std::to_string(request->argv.size())},
                           {"environment", std::to_string(request->environment.size())},
                           {"credentials", std::to_string(request->credentials.size())},
                           {"taskEnvironment", std::to_string(config_.task_environment.size())},
                           {"captureStdout", request->capture_stdout ? "true" : "false"}});
    request_ = std::move(*request);
    if (config_.signed_result) {
        record_subject(*request_);
    }
    co_return trial_phase::starting;
}

// starting: the reused-environment check, the graces fitted into the budget, `run` to the helper.
asio::awaitable<trial_phase> trial::start() {
    const auto owner = env_.earlier_owner();
    const auto refusal = refuse_secrets(*request_, config_, owner);
    if (refusal) {
        co_return end(exit_refused, *refusal);
    }
    if (brings_secrets(*request_, config_) && !owner.empty()) {
        trusted_reuse_ = owner;
        log_.phase("trusted", {{"reusedContainer", owner}});
    }
    if (!subject_owns_because_.empty()) {
        env_.mark_owned_by_subject(subject_owns_because_); // before `run`: the subject may never end cleanly
    }
    const auto placement = place_run();
    const auto fitted = fit_graces_to_budget();
    std::string line;
    {
        auto run = make_run_request(*request_, config_, fitted, placement);
        record_.user = run.user;
        line = contracts::serialize(run);
    } // `run`'s copies of the secrets freed, and so wiped (relay/support/wiping_heap.cpp)
    // Nothing needs them once `run` is made: freed now, not with the trial (swapped out: clear() would keep
    // a short value's bytes inline in the vector's storage).
    contracts::variables().swap(request_->credentials);
    contracts::variables().swap(request_->environment);
    const bool run_sent = co_await session_->send(std::move(line));
    if (!run_sent) {
        co_return end(exit_environment, "the helper session ended before the subject started");
    }
    last_heard_ = clock_type::now();
    spawn(write_to_helper()); // every later line goes through it, in order
    co_return trial_phase::supervising;
}

// supervising: the subject runs until its report, a cancel, a lost transport, or three missed heartbeats
// (the supervisor stopped — a root subject can SIGSTOP it — or hung).
std::optional<clock_type::time_point> trial::heartbeat_deadline() const {
    return heartbeat_.count() > 0 ? std::optional(last_heard_ + 3 * heartbeat_) : std::nullopt;
}

asio::awaitable<trial_phase> trial::on_supervising(event& e) {
    switch (e.what) {
    case event::kind::helper_message:
        co_return co_await on_supervised(e.message);
    case event::kind::subject_input: {
        contracts::input_message input{std::move(e.text), e.eof};
        to_helper(contracts::serialize(input));
        co_return trial_phase::supervising;
    }
    case event::kind::window_changed:
        send_window_size();
        co_return trial_phase::supervising;
    case event::kind::signal:
        settling_for_ = settle_cause::cancellation;
        co_return trial_phase::settling;
    case event::kind::helper_closed:
        // Killed from inside (a root subject can), or the container was killed, or the engine went away:
        // settle without it, and destroy only if that fails.
        log_.error("the helper session ended without a report");
        co_return trial_phase::recovering;
    default: // any control line, EOF or unreadable input while the subject runs is transport loss
        log_.error(e.what == event::kind::orchestrator_line ? "control line before the subject finished"
                                                            : "orchestrator: " + e.text);
        settling_for_ = settle_cause::transport_lost;
        co_return trial_phase::settling;
    }
}

// The supervisor went silent: a paused environment is waited for, else the trial recovers.
asio::awaitable<trial_phase> trial::on_silence() {
    const auto silent = std::chrono::duration_cast<milliseconds>(clock_type::now() - last_heard_);
    if (silent < 3 * heartbeat_) {
        co_return trial_phase::supervising; // a heartbeat arrived meanwhile: wait again from it
    }
    // A paused container freezes the supervisor with the subject: nothing is wrong inside, so the trial waits
    // for it (as long as the subject would run; a cancellation still settles it).
    const auto fault = co_await env_.diagnose_outside();
    if (fault && fault->frozen) {
        if (!paused_said_) {
            log_.phase("paused", {{"why", fault->message + "; waiting for it to be resumed"}});
            paused_said_ = true;
        }
        last_heard_ = clock_type::now();
        co_return trial_phase::supervising;
    }
    log_.error("the supervisor stopped answering: no heartbeat for " + std::to_string(silent.count()) +
               " ms");
    vanished_ = "stopped answering (stopped from inside the environment, or hung)";
    co_return trial_phase::recovering;
}

asio::awaitable<trial_phase> trial::on_supervised(const contracts::session_message& message) {
    if (const auto* started = std::get_if<contracts::started_message>(&message)) {
        pgid_ = static_cast<int>(started->pgid);
        log_.phase("started", {{"pid", std::to_string(started->pid)}});
        if (config_.input_fd >= 0 && !stdin_) {
            stdin_ = std::make_unique<subject_stdin>(executor_, config_.input_fd);
            spawn(forward_input());
        }
    } else if (const auto* taken = std::get_if<contracts::input_taken_message>(&message)) {
        input_in_flight_ -= std::min<std::uint64_t>(input_in_flight_, taken->bytes);
        input_credit_.cancel(); // the forwarder may read on
    } else if (const auto* failed = std::get_if<contracts::error_message>(&message)) {
        if (failed->code == contracts::helper_fault::artifacts_unavailable ||
            failed->code == contracts::helper_fault::spawn_failed) {
            // A same-uid helper's failure may be one a root helper would not have had: say why it was not
            // root.
            const auto why = env_.not_root_because();
            co_return end(exit_environment,
                          failed->message + (why.empty() ? ""
                                                         : " (the helper ran as the subject's user, not as "
                                                           "root: " +
                                                               why + ")"));
        }
        log_.error("helper: " + failed->message);
    } else if (const auto* report = std::get_if<contracts::report_message>(&message)) {
        log_report(false, *report);
        // Artifacts are already in place (the helper streamed them): `executed` follows at once. What the
        // subject left running is left alone: the verifier scores the environment as is.
        // A named local, never a temporary in a co_await operand: GCC 12 destroys those twice.
        const contracts::executed_message executed{config_.token, contracts::termination::exited,
                                                   report->exit_code, report->stdout_text,
                                                   report->diagnostic};
        const bool sent = co_await send_executed(executed, false);
        co_return sent ? trial_phase::reporting
                       : end(exit_transport_lost, "Maka Eval relay transport closed before result");
    }
    co_return trial_phase::supervising;
}

// settling: a cancel to the helper, its report awaited until the settle span ends; past it, destroy
// within what is left of the budget, unless something outside explains it.
asio::awaitable<trial_phase> trial::settle() {
    const auto now = clock_type::now(); // one reading: the deadlines and the logged span agree
    settle_deadline_ = teardown_.settle_by(now);
    const std::string reason = settling_for_ == settle_cause::transport_lost ? "transport-lost"
                               : host_teardown_                              ? "host-teardown"
                                                                             : "framework-timeout";
    log_.phase("settle",
               {{"reason", reason}, {"settleLeftMs", std::to_string(teardown_.settle_left(now).count())}});
    // Even if the helper can no longer be asked, its report may already be on the way: keep listening.
    to_helper(contracts::serialize(contracts::cancel_request{reason}));
    log_.phase("stopping",
               {{"message", "TERM sent to the subject, KILL in " + std::to_string(term_grace_.count()) +
                                " ms if it is still running; Ctrl-C (SIGINT) again to KILL now"}});
    co_return trial_phase::settling;
}

asio::awaitable<trial_phase> trial::on_settling(event& e) {
    if (e.what == event::kind::signal && e.signal == SIGINT && !kill_now_sent_) {
        kill_now_sent_ = true;
        log_.phase("kill-now", {{"why", "SIGINT while stopping"}});
        to_helper(contracts::serialize(contracts::cancel_request{std::string(contracts::kill_now_reason)}));
    } else if (e.what == event::kind::helper_closed) {
        log_.error("the helper session ended without a report while settling");
        co_return trial_phase::recovering;
    } else if (e.what == event::kind::helper_message) {
        if (const auto* started = std::get_if<contracts::started_message>(&e.message)) {
            pgid_ = static_cast<int>(started->pgid);
        } else if (const auto* report = std::get_if<contracts::report_message>(&e.message)) {
            if (report->settled && !report->quiesced) {
                log_.error("the subject's processes did not quiesce");
                co_return co_await settle_failed();
            }
            log_report(true, *report);
            std::optional<contracts::report_message> settled = *report;
            co_return co_await after_settle(std::move(settled));
        }
    }
    co_return trial_phase::settling; // nothing the orchestrator says changes how the subject is stopped
}

// Settling failed or ran out of time. A paused container is frozen, not lost: it is left paused for whoever
// paused it; an engine that is down has destroyed nothing.
asio::awaitable<trial_phase> trial::settle_failed() {
    const auto fault = co_await env_.diagnose_outside();
    if (fault) {
        log_.error(fault->message + (fault->frozen
                                         ? "; it stayed paused for the whole teardown budget, so it "
                                           "is left paused, not destroyed"
                                         : "; nothing is destroyed"));
        // Its session is let go (a frozen helper never ends it): resumed, the helper finds its input closed
        // and settles the subject itself.
        session_->kill();
    } else {
        co_await destroy_by(teardown_.start());
    }
    std::optional<contracts::report_message> none;
    co_return co_await after_settle(std::move(none));
}

// What settling ends in. A subject that finished before the cancellation took hold is reported as it
// finished, even under host teardown; one stopped by us is reported as a framework timeout (its frame, if it
// printed one while stopping, passes through), and not at all under host teardown.
asio::awaitable<trial_phase> trial::after_settle(std::optional<contracts::report_message> report) {
    if (settling_for_ == settle_cause::transport_lost) {
        co_return end(exit_transport_lost, "Maka Eval relay received control before execution");
    }
    const bool terminal = report && !report->settled;
    std::optional<contracts::executed_message> executed;
    if (terminal) {
        executed = contracts::executed_message{config_.token, contracts::termination::exited,
                                               report->exit_code, report->stdout_text, report->diagnostic};
    } else if (!host_teardown_) {
        const auto missing = request_->capture_stdout
                                 ? contracts::diagnostic::over(contracts::category::result_frame_missing, "")
                                 : contracts::diagnostic::none();
        executed = contracts::executed_message{
            config_.token, contracts::termination::framework_timeout, contracts::framework_timeout_exit_code,
            report ? report->stdout_text : std::string(), report ? report->diagnostic : missing};
    }
    const auto ended = end(host_teardown_ ? exit_host_teardown : exit_cancelled,
                           host_teardown_               ? "host teardown"
                           : cancelled_because_.empty() ? "framework timeout"
                                                        : "framework timeout: " + cancelled_because_);
    if (!executed || executed_sent_) {
        co_return ended;
    }
    const bool sent = co_await send_executed(*executed, true);
    co_return sent ? trial_phase::lingering : ended;
}

// recovering: the supervisor vanished. Settles the scope through the backend within the trial's one
// teardown deadline (started here if nothing started it, else what a settle before left of it), and
// destroys as the last resort.
asio::awaitable<trial_phase> trial::recover() {
    const auto now = clock_type::now();
    const auto final_deadline = teardown_.start(now);
    log_.phase("recover", {{"settleLeftMs", std::to_string(teardown_.settle_left(now).count())}});
    // The backend acts by settle_by and may only watch after it (recovery_window); whatever its waits are (an
    // engine that stalls), they end with the watch span.
    const recovery_window window{teardown_.settle_by(now), teardown_.watch_until(now)};
    relay_timer watch_span(executor_, window.watch_until);
    auto raced =
        co_await (env_.recover(pgid_, scope_path_, window) || watch_span.async_wait(as_tuple(use_awaitable)));
    if (raced.index() == 1) {
        log_.error("the recovery did not finish within the watch span");
    }
    const auto outcome = raced.index() == 0 ? std::get<0>(raced) : recovery::failed;
    const auto what = co_await what_vanished(outcome);
    const auto report = report_recovery(outcome, what, staged_note());
    if (report.let_session_go) {
        session_->kill();
    }
    if (report.how.empty()) {
        co_await destroy_by(final_deadline);
    } else {
        log_.phase("recovered", {{"how", std::string(report.how)}});
        record_.ending = ending_of(outcome);
    }
    if (settling_for_ == settle_cause::none) {
        co_return end(exit_environment, "Maka Eval subject execution failed: " + report.message);
    }
    log_.error(report.message);
    std::optional<contracts::report_message> none;
    co_return co_await after_settle(std::move(none));
}

asio::awaitable<void> trial::destroy_by(clock_type::time_point until) {
    log_.phase("destroy");
    record_.ending = "destroyed";
    session_->kill();
    co_await env_.destroy(pgid_, left_until(until));
}

// reporting: `executed` sent after the subject's own end; the orchestrator's `verify` closes the trial.
asio::awaitable<trial_phase> trial::on_reporting(event& e) {
    if (e.what == event::kind::signal) {
        // `executed` was already sent: nothing more to report, the cancellation still propagates.
        co_return end(e.signal == SIGINT ? exit_host_teardown : exit_cancelled, "cancelled after executed");
    }
    if (e.what == event::kind::orchestrator_closed || e.what == event::kind::orchestrator_bad) {
        co_return end(exit_transport_lost, "the orchestrator closed after executed without verify");
    }
    if (e.what != event::kind::orchestrator_line) {
        co_return trial_phase::reporting;
    }
    const auto message = orchestrator_message(e.text, "verify");
    if (const auto* ended = std::get_if<trial_phase>(&message)) {
        co_return *ended;
    }
    log_.phase("verify");
    co_return end(exit_success);
}

// lingering: the time the original gave the orchestrator's `verify` before closing, after a cancel.
asio::awaitable<trial_phase> trial::linger() {
    linger_until_ = clock_type::now() + linger_after_cancel;
    co_return trial_phase::lingering;
}

asio::awaitable<trial_phase> trial::on_lingering(event& e) {
    // Its `verify`, or its close: nothing more to wait for. Anything else changes nothing now.
    const bool over = from_orchestrator(e) && e.what != event::kind::orchestrator_bad;
    co_return over ? trial_phase::done : trial_phase::lingering;
}

asio::awaitable<trial_phase> trial::linger_over() {
    co_return trial_phase::done;
}

} // namespace detail

asio::awaitable<trial_outcome> run_trial(const trial_config& config, backend& env, phase_log& log) {
    auto executor = co_await asio::this_coro::executor;
    auto t = std::make_shared<detail::trial>(config, env, log, executor);
    co_return co_await t->run();
}

} // namespace maka_eval::relay
