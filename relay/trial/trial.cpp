// The trial state machine (see trial.hpp). Every source of events — orchestrator lines, helper messages,
// signals — is read by its own coroutine into one channel; the trial takes events from it one at a time,
// with a timer wherever a wait has a bound. One thread, no locks.
#include "relay/trial/trial.hpp"

#include "contracts/digest.hpp"
#include "contracts/limits.hpp"
#include "contracts/orchestrator_messages.hpp"
#include "contracts/proc_status.hpp"
#include "contracts/secret.hpp"
#include "contracts/session_messages.hpp"
#include "contracts/wire_json.hpp"
#include "policy/egress_gate.hpp"
#include "relay/support/event_queue.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/support/tcp_endpoints.hpp"
#include "relay/trial/teardown_budget.hpp"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace maka_eval::relay {
namespace {

// Why a subject described by `hello` will own its environment: root, or a non-root uid holding
// capabilities (it can change what root's next session runs). Empty when neither.
std::string owning_power(const contracts::hello_message& hello) {
    if (hello.uid == 0) {
        return "subject uid 0";
    }
    for (const auto& [name, value] : hello.capabilities) {
        const auto set = policy::parse_hex(value);
        if ((name == "CapEff" || name == "CapPrm" || name == "CapAmb") && set && *set != 0) {
            std::string why = "subject uid " + std::to_string(hello.uid) + " with capabilities (";
            why.append(name).append(" ").append(value).append(")");
            return why;
        }
    }
    return {};
}

using asio::as_tuple;
using asio::use_awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct event {
    enum class kind {
        orchestrator_line,
        orchestrator_closed,
        orchestrator_bad,
        helper_message,
        helper_closed,
        signal,
    };
    kind what = kind::orchestrator_closed;
    std::string text; // the orchestrator's line, or what was wrong
    contracts::session_message message;
    int signal = 0;
};

constexpr auto connect_timeout = milliseconds(30'000);
constexpr auto hello_timeout = milliseconds(120'000);
constexpr auto write_timeout = milliseconds(30'000);
// After `executed` on the cancellation path the original closed within about a second (its cleanup exec);
// closing sooner could make the orchestrator's `verify` meet a closed socket.
constexpr auto linger_after_cancel = milliseconds(1'000);

class trial : public std::enable_shared_from_this<trial> {
  public:
    trial(const trial_config& config, backend& env, phase_log& log, const asio::any_io_executor& executor)
        : config_(config), env_(env), log_(log), executor_(executor), events_(executor), socket_(executor),
          signals_(executor, SIGTERM, SIGINT, SIGHUP), stop_latch_(executor, clock_type::time_point::max()),
          teardown_(milliseconds(config.common.teardown_timeout_ms)) {}

    asio::awaitable<trial_outcome> run();

  private:
    asio::awaitable<void> read_orchestrator();
    asio::awaitable<void> read_helper();
    asio::awaitable<void> watch_signals();
    void post(event e) { events_.post(std::move(e)); }
    // Starts a reader; a failure it throws is reported, never silently dropped.
    void spawn(asio::awaitable<void> reader) {
        asio::co_spawn(executor_, std::move(reader),
                       [self = shared_from_this()](const std::exception_ptr& error) {
                           if (error) {
                               self->log_.error("reader failed: " + exception_text(error));
                           }
                       });
    }
    asio::awaitable<std::optional<event>> next(std::optional<clock_type::time_point> deadline) {
        return events_.next(deadline);
    }
    // Before the subject starts, a backend call (the session, the egress gate) may wait on an environment
    // that does not answer: a signal ends it at once (nullopt; the call is cancelled), so SIGTERM is honoured
    // at any point. The signal stays in the event queue as well.
    template <class T>
    asio::awaitable<std::optional<T>> unless_signalled(asio::awaitable<T> call) {
        auto done = co_await (std::move(call) || stop_latch_.async_wait(as_tuple(use_awaitable)));
        if (done.index() == 1) {
            co_return std::nullopt;
        }
        co_return std::move(std::get<0>(done));
    }
    asio::awaitable<bool> send_orchestrator(std::string line);
    asio::awaitable<trial_outcome> prepare_and_run();
    asio::awaitable<trial_outcome> gate(const contracts::hello_message& hello);
    asio::awaitable<trial_outcome> supervise(const contracts::execute_request& request);
    asio::awaitable<std::optional<contracts::report_message>> settle(const std::string& reason);
    // The helper vanished: settles the scope through the backend, destroys as the last resort, and says what
    // happened for the outcome.
    // `what` says what became of the supervisor, for the outcome.
    asio::awaitable<std::string> recover(std::string what = "vanished without a report (killed from inside "
                                                            "the environment?)");
    // The last resort: the helper is ended and the environment destroyed, within what is left until `until`.
    asio::awaitable<void> destroy_by(clock_type::time_point until);
    asio::awaitable<trial_outcome> cancelled(const contracts::execute_request& request, int signal);
    asio::awaitable<trial_outcome> await_decision();
    void finish();
    // The subject's consumption: its own phase line, and kept for `run` (the orchestrator never sees it).
    void note_usage(const contracts::report_message& report) {
        stderr_tail_ = report.stderr_tail;
        if (!report.usage) {
            return;
        }
        usage_ = report.usage;
        log_.phase("usage", {{"userMs", std::to_string(usage_->user_ms)},
                             {"systemMs", std::to_string(usage_->system_ms)},
                             {"peakRssKiB", std::to_string(usage_->peak_rss_kib)},
                             {"processes", std::to_string(usage_->processes)},
                             {"wallMs", std::to_string(usage_->wall_ms)}});
    }
    // How many secret values were masked in the artifacts (never which).
    void log_masking(const contracts::report_message& report) {
        if (report.stdout_artifact.masked + report.stderr_artifact.masked > 0) {
            log_.phase("masked", {{"stdout", std::to_string(report.stdout_artifact.masked)},
                                  {"stderr", std::to_string(report.stderr_artifact.masked)}});
        }
    }
    void log_truncation(const contracts::report_message& report) {
        for (const auto* artifact : {&report.stdout_artifact, &report.stderr_artifact}) {
            if (artifact->truncated) {
                log_.error(artifact->path +
                           " was cut at the artifact limit: " + std::to_string(artifact->written) + " of " +
                           std::to_string(artifact->bytes) + " bytes kept (sha256 covers them all)");
            }
        }
    }

    static trial_outcome outcome(int code, std::string message = {}) {
        return {code, std::move(message), std::nullopt, {}, {}};
    }
    trial_outcome cancelled_before_start(int signal) {
        return outcome(signal == SIGINT ? exit_host_teardown : exit_cancelled,
                       signal == SIGINT ? "host teardown before the subject started"
                                        : "cancelled before the subject started");
    }

    const trial_config& config_;
    backend& env_;
    phase_log& log_;
    asio::any_io_executor executor_;
    event_queue<event> events_;
    tcp::socket socket_;
    asio::signal_set signals_;
    // Expires at the first signal (and stays expired): what unless_signalled races a call against.
    asio::steady_timer stop_latch_;
    int first_signal_ = 0;
    bool paused_said_ = false; // the `paused` phase is said once
    std::unique_ptr<helper_session> session_;
    std::optional<int> pgid_;
    std::string scope_path_;
    // The supervisor's liveness: its heartbeat interval (0: it sends none) and when it last said anything.
    milliseconds heartbeat_{0};
    clock_type::time_point last_heard_ = clock_type::now();
    bool host_teardown_ = false;
    bool root_helper_ = false;
    milliseconds term_grace_{0}; // as fitted into the budget and sent in `run`
    // Why this trial's subject will own the environment (it runs as root or with capabilities: hello says
    // so); empty when it will not. Recorded by the backend before `run` is sent.
    std::string subject_owns_because_;
    std::string trusted_reuse_; // the earlier owner the operator accepted (--trust-reused-container)
    bool executed_sent_ = false;
    // One deadline for the whole teardown: settle, recovery and destroy share it (teardown_budget.hpp).
    teardown_deadline teardown_;
    std::optional<contracts::subject_usage> usage_;
    std::string stderr_tail_;
};

asio::awaitable<void> trial::watch_signals() {
    auto self = shared_from_this();
    while (true) {
        auto [ec, sig] = co_await signals_.async_wait(as_tuple(use_awaitable));
        if (ec) {
            co_return;
        }
        if (first_signal_ == 0) {
            first_signal_ = sig;
            stop_latch_.expires_at(clock_type::time_point::min());
        }
        // SIGHUP (a closed terminal, a process supervisor's hang-up) is a cancellation as SIGTERM is: the
        // subject settled within the budget and reported; only SIGINT means host teardown.
        log_.phase("signal", {{"signal", sig == SIGINT   ? "SIGINT"
                                         : sig == SIGHUP ? "SIGHUP"
                                                         : "SIGTERM"},
                              {"means", sig == SIGINT ? "host teardown" : "cancellation"}});
        post({event::kind::signal, {}, {}, sig == SIGINT ? SIGINT : SIGTERM});
    }
}

asio::awaitable<void> trial::read_orchestrator() {
    auto self = shared_from_this();
    std::string buffer;
    while (true) {
        auto [ec, size] = co_await asio::async_read_until(
            socket_, asio::dynamic_buffer(buffer, contracts::control_line_limit_bytes), '\n',
            as_tuple(use_awaitable));
        if (!ec) {
            post({event::kind::orchestrator_line, buffer.substr(0, size - 1), {}, 0});
            buffer.erase(0, size);
            continue;
        }
        if (ec == asio::error::operation_aborted) {
            co_return;
        }
        if (ec == asio::error::not_found) {
            post({event::kind::orchestrator_bad,
                  "a control line exceeds " + std::to_string(contracts::control_line_limit_bytes) + " bytes",
                  {},
                  0});
            co_return;
        }
        // A final line without "\n" before EOF counts, as the original's readline gave it.
        if (ec == asio::error::eof && !buffer.empty()) {
            post({event::kind::orchestrator_line, std::move(buffer), {}, 0});
        }
        post(
            {event::kind::orchestrator_closed, ec == asio::error::eof ? "peer closed" : ec.message(), {}, 0});
        co_return;
    }
}

asio::awaitable<void> trial::read_helper() {
    auto self = shared_from_this();
    while (session_) {
        auto line = co_await session_->receive();
        if (!line) {
            post({event::kind::helper_closed, {}, {}, 0});
            co_return;
        }
        last_heard_ = clock_type::now();
        auto message = contracts::parse_session_message(*line);
        if (!message) {
            log_.error("helper sent an unreadable line: " + message.error().message());
            continue;
        }
        if (std::holds_alternative<contracts::heartbeat_message>(*message)) {
            continue; // its whole meaning is in last_heard_
        }
        if (const auto* output = std::get_if<contracts::output_message>(&*message)) {
            if (config_.follow != nullptr) {
                config_.follow->deliver(*output);
            }
            continue; // shown, never part of the trial's record
        }
        post({event::kind::helper_message, {}, std::move(*message), 0});
    }
}

asio::awaitable<bool> trial::send_orchestrator(std::string line) {
    asio::steady_timer timer(executor_, write_timeout);
    auto done = co_await (asio::async_write(socket_, asio::buffer(line), as_tuple(use_awaitable)) ||
                          timer.async_wait(as_tuple(use_awaitable)));
    co_return done.index() == 0 && !std::get<0>(std::get<0>(done));
}

asio::awaitable<trial_outcome> trial::run() {
    spawn(watch_signals());
    auto result = co_await prepare_and_run();
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
    co_return result;
}

void trial::finish() {
    boost::system::error_code ignored;
    if (session_) {
        session_->close_input();
    }
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    signals_.cancel(ignored);
    events_.close();
}

asio::awaitable<trial_outcome> trial::prepare_and_run() {
    // 1. Connect first, before any container work, as the original does.
    // GCC 12 destroys temporaries inside a co_await operand twice: every such argument is a named local.
    const std::string service = std::to_string(config_.port);
    const std::string host = config_.host;
    auto resolved = co_await tcp_endpoints(executor_, host, service);
    if (!resolved) {
        co_return outcome(exit_transport_lost, "cannot resolve the orchestrator " + config_.host + ": " +
                                                   resolved.error().message());
    }
    const auto& endpoints = *resolved;
    asio::steady_timer connect_timer(executor_, connect_timeout);
    auto connected = co_await (asio::async_connect(socket_, endpoints, as_tuple(use_awaitable)) ||
                               connect_timer.async_wait(as_tuple(use_awaitable)) ||
                               stop_latch_.async_wait(as_tuple(use_awaitable)));
    if (connected.index() == 2) {
        co_return cancelled_before_start(first_signal_);
    }
    if (connected.index() == 1 || std::get<0>(std::get<0>(connected))) {
        co_return outcome(exit_transport_lost, "cannot connect to the orchestrator at " + config_.host + ":" +
                                                   std::to_string(config_.port));
    }
    log_.phase("connected", {{"backend", env_.describe()}});

    // 2. The helper session; its `hello` gives the working directory and the isolation evidence.
    auto session = co_await unless_signalled(env_.open_session());
    if (!session) {
        co_return cancelled_before_start(first_signal_);
    }
    if (!*session) {
        co_return outcome(exit_environment, session->error().message);
    }
    session_ = std::move(**session);
    spawn(read_helper());
    std::optional<contracts::hello_message> hello;
    const auto hello_deadline = clock_type::now() + hello_timeout;
    while (!hello) {
        auto e = co_await next(hello_deadline);
        if (!e || e->what == event::kind::helper_closed) {
            co_return outcome(
                exit_environment,
                "Maka Eval could not resolve the task working directory (the helper did not answer)");
        }
        if (e->what == event::kind::signal) {
            co_return cancelled_before_start(e->signal);
        }
        if (e->what == event::kind::helper_message) {
            if (auto* h = std::get_if<contracts::hello_message>(&e->message)) {
                hello = *h;
            }
        }
    }
    if (!hello->cwd.starts_with("/") || hello->cwd.find('\0') != std::string::npos) {
        co_return outcome(exit_environment, "Maka Eval could not resolve the task working directory");
    }
    // Whether the subject can reach its supervisor. "root": out of the subject's reach; "same-uid": no root
    // exec here, within its reach; "root-subject": a root subject can signal anything in its PID namespace.
    // README, security, says what each guarantees.
    const char* supervision = hello->supervisor_uid == 0 && hello->uid != 0 ? "root"
                              : hello->uid == 0                             ? "root-subject"
                                                                            : "same-uid";
    heartbeat_ = milliseconds(hello->heartbeat_ms);
    root_helper_ = hello->supervisor_uid == 0;
    subject_owns_because_ = owning_power(*hello);
    // "notRootBecause": why a root supervisor was refused here (the container's capabilities), if it was.
    log_.phase("helper", {{"cwd", hello->cwd},
                          {"helper", hello->helper_version},
                          {"subjectUid", std::to_string(hello->uid)},
                          {"supervisor", supervision},
                          {"notRootBecause", env_.not_root_because()}});

    // 3. The egress gate, before `ready`: a refusal means the orchestrator never sees `ready`.
    if (config_.common.egress_required) {
        auto refused = co_await unless_signalled(gate(*hello));
        if (!refused) {
            co_return cancelled_before_start(first_signal_);
        }
        if (refused->exit_code != exit_success) {
            co_return *refused;
        }
    }

    // 4. `ready`, then one `execute`.
    std::string ready =
        contracts::serialize(contracts::ready_message{config_.token, config_.instruction, hello->cwd});
    // co_await only as a statement of its own: GCC 12 miscompiles it inside conditions.
    const bool ready_sent = co_await send_orchestrator(std::move(ready));
    if (!ready_sent) {
        co_return outcome(exit_transport_lost, "Maka Eval relay transport closed before ready");
    }
    log_.phase("ready");
    spawn(read_orchestrator());
    while (true) {
        auto e = co_await next(std::nullopt);
        if (!e) {
            co_return outcome(exit_internal, "event channel closed");
        }
        switch (e->what) {
        case event::kind::signal:
            co_return cancelled_before_start(e->signal);
        case event::kind::orchestrator_closed:
            co_return outcome(exit_transport_lost, "the orchestrator closed before execute");
        case event::kind::orchestrator_bad:
            co_return outcome(exit_transport_lost, "Maka Eval relay message was unavailable: " + e->text);
        case event::kind::helper_closed:
            co_return outcome(exit_environment, "the helper session ended before execute");
        case event::kind::helper_message:
            continue;
        case event::kind::orchestrator_line:
            break;
        }
        auto object = contracts::parse_object(e->text, contracts::control_line_limit_bytes);
        contracts::wipe(e->text);
        if (!object) {
            // Unreadable or non-object JSON is transport loss in the original, not a refusal.
            co_return outcome(exit_transport_lost,
                              "Maka Eval relay message was unavailable: " + object.error().message());
        }
        if (auto valid = contracts::require_message(*object, config_.token, "execute"); !valid) {
            co_return outcome(exit_refused, valid.error().message());
        }
        auto request = contracts::validate_execute(*object);
        object->clear();
        if (!request) {
            co_return outcome(exit_refused, request.error().message());
        }
        log_.phase("execute", {{"argc", std::to_string(request->argv.size())},
                               {"environment", std::to_string(request->environment.size())},
                               {"credentials", std::to_string(request->credentials.size())},
                               {"taskEnvironment", std::to_string(config_.common.task_environment.size())},
                               {"captureStdout", request->capture_stdout ? "true" : "false"}});
        co_return co_await supervise(*request);
    }
}

asio::awaitable<trial_outcome> trial::gate(const contracts::hello_message& hello) {
    // The sidecar's namespace, then the judgement (capabilities before namespaces), then the pin.
    std::string sidecar = config_.common.policy_sidecar;
    auto policy_ns = co_await env_.policy_namespace(std::move(sidecar));
    if (!policy_ns) {
        log_.error(policy_ns.error().message);
        co_return outcome(exit_environment,
                          policy::make_refusal(policy::gate_error::evidence_unreadable).message);
    }
    if (auto admitted = policy::check_subject(hello.capabilities, hello.net_namespace, *policy_ns);
        !admitted) {
        co_return outcome(exit_environment, admitted.error().message);
    }
    auto host = policy::proxy_host_from(config_.common.egress_host);
    if (!host) {
        co_return outcome(exit_environment, host.error().message);
    }
    std::vector<std::string> pin_args{"pin-proxy", "--host", *host}; // not braced inside co_await: GCC 12 bug
    auto pinned = co_await env_.run_helper_as_root(std::move(pin_args), milliseconds(0));
    const auto refused =
        outcome(exit_environment, policy::make_refusal(policy::gate_error::pin_failed).message);
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
    co_return outcome(exit_success);
}

asio::awaitable<trial_outcome> trial::supervise(const contracts::execute_request& request) {
    // A reused environment an earlier subject owned (root there, or no record of who ran there): what it
    // left may read whatever this trial sends, so no secret goes in unless the operator accepted that.
    const bool secrets = !request.credentials.empty() || !config_.common.task_environment.empty();
    if (const auto owner = env_.earlier_owner(); secrets && !owner.empty()) {
        if (!config_.common.trust_reused_container) {
            const bool credentials = !request.credentials.empty();
            co_return outcome(
                exit_refused,
                std::string("this trial's ") + (credentials ? "credentials were" : "task environment was") +
                    " not sent: the environment was " + owner +
                    ", and what that subject left there could read " + (credentials ? "them" : "it") +
                    "; use a fresh container, or pass --trust-reused-container to accept that");
        }
        trusted_reuse_ = owner;
        log_.phase("trusted", {{"reusedContainer", owner}});
    }
    if (!subject_owns_because_.empty()) {
        env_.mark_owned_by_subject(subject_owns_because_); // before `run`: the subject may never end cleanly
    }
    contracts::run_request run;
    run.argv = request.argv;
    // The task's environment first, as Harbor's _merge_env does: what `execute` sets (its environment and
    // credentials) wins over an entry of the same name.
    for (const auto& task_entry : config_.common.task_environment) {
        const auto named = [&task_entry](const auto& entry) { return entry.first == task_entry.first; };
        if (std::ranges::none_of(request.environment, named) &&
            std::ranges::none_of(request.credentials, named)) {
            run.environment.push_back(task_entry);
        }
    }
    run.environment.insert(run.environment.end(), request.environment.begin(), request.environment.end());
    run.credentials = request.credentials;
    run.result_token = request.result_token;
    run.capture_stdout = request.capture_stdout;
    run.mask = config_.common.mask;
    if (config_.follow != nullptr) {
        run.follow = env_.streams_live();
        if (!run.follow) {
            log_.error("follow: not available on the " + env_.describe() +
                       " backend (its runner returns output only when the exec ends); the output is in the "
                       "artifacts afterwards");
        }
    }
    // The scope file's name derives from the relay token without revealing it to the subject.
    run.scope_path = env_.scope_path(contracts::sha256_hex(config_.token).substr(0, 24));
    scope_path_ = run.scope_path;
    run.artifacts_dir = env_.artifacts_dir();
    // The graces fitted inside the teardown budget now, so that the helper's settle (also the one the
    // dead-man switch or a root cancel starts) ends within it.
    const settle_graces configured{milliseconds(config_.common.term_grace_ms),
                                   milliseconds(config_.common.kill_grace_ms), milliseconds(run.drain_ms)};
    const auto fitted = fit_graces(milliseconds(config_.common.teardown_timeout_ms), configured);
    if (fitted != configured) {
        log_.phase("graces", {{"termGraceMs", std::to_string(fitted.term.count())},
                              {"killGraceMs", std::to_string(fitted.kill.count())},
                              {"drainMs", std::to_string(fitted.drain.count())},
                              {"teardownTimeoutMs", std::to_string(config_.common.teardown_timeout_ms)},
                              {"why", "fitted inside the teardown budget (configured TERM " +
                                          std::to_string(configured.term.count()) + " ms, KILL " +
                                          std::to_string(configured.kill.count()) + " ms)"}});
    }
    run.term_grace_ms = static_cast<std::uint32_t>(fitted.term.count());
    term_grace_ = fitted.term;
    run.kill_grace_ms = static_cast<std::uint32_t>(fitted.kill.count());
    run.drain_ms = static_cast<std::uint32_t>(fitted.drain.count());
    run.artifact_limit = config_.common.artifact_limit;
    // On this host (local backend) nothing an earlier run left is ours to stop.
    run.keep_leftovers = config_.common.keep_leftovers || env_.is_host();
    std::string line = contracts::serialize(run);
    contracts::wipe_values(run.environment);
    contracts::wipe_values(run.credentials);
    const bool run_sent = co_await session_->send(std::move(line));
    if (!run_sent) {
        co_return outcome(exit_environment, "the helper session ended before the subject started");
    }
    last_heard_ = clock_type::now();
    while (true) {
        // Three missed heartbeats: the supervisor is stopped (a root subject can SIGSTOP it) or hung.
        std::optional<clock_type::time_point> quiet_until;
        if (heartbeat_.count() > 0) {
            quiet_until = last_heard_ + 3 * heartbeat_;
        }
        auto e = co_await next(quiet_until);
        if (!e && quiet_until && clock_type::now() >= last_heard_ + 3 * heartbeat_) {
            const auto silent = std::chrono::duration_cast<milliseconds>(clock_type::now() - last_heard_);
            // A paused container freezes the supervisor with the subject: nothing is wrong inside, so the
            // trial waits for it (as long as the subject would run; a cancellation still settles it).
            if (auto fault = co_await env_.diagnose_outside(); fault && fault->frozen) {
                if (!paused_said_) {
                    log_.phase("paused", {{"why", fault->message + "; waiting for it to be resumed"}});
                    paused_said_ = true;
                }
                last_heard_ = clock_type::now();
                continue;
            }
            log_.error("the supervisor stopped answering: no heartbeat for " +
                       std::to_string(silent.count()) + " ms");
            const auto recovered =
                co_await recover("stopped answering (stopped from inside the environment, or hung)");
            co_return outcome(exit_environment, "Maka Eval subject execution failed: " + recovered);
        }
        if (!e) {
            if (quiet_until && events_.is_open()) {
                continue; // a heartbeat arrived meanwhile: wait again from it
            }
            co_return outcome(exit_internal, "event channel closed");
        }
        if (e->what == event::kind::helper_message) {
            if (const auto* started = std::get_if<contracts::started_message>(&e->message)) {
                pgid_ = static_cast<int>(started->pgid);
                log_.phase("started", {{"pid", std::to_string(started->pid)}});
                continue;
            }
            if (const auto* failed = std::get_if<contracts::error_message>(&e->message)) {
                if (failed->code == contracts::helper_fault::artifacts_unavailable ||
                    failed->code == contracts::helper_fault::spawn_failed) {
                    // A same-uid helper's failure may be one a root helper would not have had: say why it
                    // was not root.
                    const auto why = env_.not_root_because();
                    co_return outcome(exit_environment,
                                      failed->message + (why.empty() ? ""
                                                                     : " (the helper ran as the subject's "
                                                                       "user, not as root: " +
                                                                           why + ")"));
                }
                log_.error("helper: " + failed->message);
                continue;
            }
            if (const auto* report = std::get_if<contracts::report_message>(&e->message)) {
                log_.phase("exited",
                           {{"exitCode", std::to_string(report->exit_code)},
                            {"diagnostic", std::string(contracts::to_string(report->diagnostic.kind))},
                            {"helperPeakRssKiB", std::to_string(report->peak_rss_kib)}});
                note_usage(*report);
                log_masking(*report);
                log_truncation(*report);
                // Artifacts are already in place (the helper streamed them): `executed` follows at once.
                const contracts::executed_message executed{config_.token, contracts::termination::exited,
                                                           report->exit_code, report->stdout_text,
                                                           report->diagnostic};
                std::string executed_line = contracts::serialize(executed);
                const bool sent = co_await send_orchestrator(std::move(executed_line));
                if (!sent) {
                    co_return outcome(exit_transport_lost, "Maka Eval relay transport closed before result");
                }
                executed_sent_ = true;
                log_.phase("executed");
                // What the subject left running is left alone: the verifier scores the environment as is.
                co_return co_await await_decision();
            }
            continue;
        }
        if (e->what == event::kind::helper_closed) {
            // The helper died without a report: killed from inside (a root subject can), or the container
            // was killed, or the engine went away. Settle without it, and destroy only if that fails.
            log_.error("the helper session ended without a report");
            const auto recovered = co_await recover();
            co_return outcome(exit_environment, "Maka Eval subject execution failed: " + recovered);
        }
        if (e->what == event::kind::signal) {
            co_return co_await cancelled(request, e->signal);
        }
        // Any control line, EOF or unreadable input while the subject runs is transport loss.
        log_.error(e->what == event::kind::orchestrator_line ? "control line before the subject finished"
                                                             : "orchestrator: " + e->text);
        const std::string reason = "transport-lost";
        co_await settle(reason);
        co_return outcome(exit_transport_lost, "Maka Eval relay received control before execution");
    }
}

asio::awaitable<trial_outcome> trial::await_decision() {
    while (true) {
        auto e = co_await next(std::nullopt);
        if (!e) {
            co_return outcome(exit_internal, "event channel closed");
        }
        switch (e->what) {
        case event::kind::orchestrator_line: {
            auto object = contracts::parse_object(e->text, contracts::control_line_limit_bytes);
            if (!object) {
                co_return outcome(exit_transport_lost,
                                  "Maka Eval relay message was unavailable: " + object.error().message());
            }
            if (auto valid = contracts::require_message(*object, config_.token, "verify"); !valid) {
                co_return outcome(exit_refused, valid.error().message());
            }
            log_.phase("verify");
            co_return outcome(exit_success);
        }
        case event::kind::orchestrator_closed:
        case event::kind::orchestrator_bad:
            co_return outcome(exit_transport_lost, "the orchestrator closed after executed without verify");
        case event::kind::signal:
            // `executed` was already sent: nothing more to report, the cancellation still propagates.
            co_return outcome(e->signal == SIGINT ? exit_host_teardown : exit_cancelled,
                              "cancelled after executed");
        default:
            continue;
        }
    }
}

asio::awaitable<std::optional<contracts::report_message>> trial::settle(const std::string& reason) {
    const auto now = clock_type::now(); // one reading: the deadlines and the logged span agree
    const auto final_deadline = teardown_.start(now);
    const auto settle_deadline = teardown_.settle_by(now);
    log_.phase("settle",
               {{"reason", reason}, {"settleLeftMs", std::to_string(teardown_.settle_left(now).count())}});
    // Even if the helper can no longer be asked, its report may already be on the way: keep listening.
    std::string cancel = contracts::serialize(contracts::cancel_request{reason});
    (void)co_await session_->send(std::move(cancel));
    log_.phase("stopping",
               {{"message", "TERM sent to the subject, KILL in " + std::to_string(term_grace_.count()) +
                                " ms if it is still running; Ctrl-C (SIGINT) again to KILL now"}});
    bool kill_now_sent = false;
    while (true) {
        auto e = co_await next(settle_deadline);
        if (e && e->what == event::kind::helper_closed) {
            log_.error("the helper session ended without a report while settling");
            const auto recovered = co_await recover();
            log_.error(recovered);
            co_return std::nullopt;
        }
        if (!e) {
            break;
        }
        if (e->what == event::kind::signal) {
            host_teardown_ = host_teardown_ || e->signal == SIGINT;
            if (e->signal == SIGINT && !kill_now_sent) {
                kill_now_sent = true;
                log_.phase("kill-now", {{"why", "SIGINT while stopping"}});
                std::string kill =
                    contracts::serialize(contracts::cancel_request{std::string(contracts::kill_now_reason)});
                (void)co_await session_->send(std::move(kill));
            }
            continue;
        }
        if (e->what != event::kind::helper_message) {
            continue; // the orchestrator can wait: nothing it says changes how the subject is stopped
        }
        if (const auto* started = std::get_if<contracts::started_message>(&e->message)) {
            pgid_ = static_cast<int>(started->pgid);
        } else if (const auto* report = std::get_if<contracts::report_message>(&e->message)) {
            if (report->settled && !report->quiesced) {
                log_.error("the subject's processes did not quiesce");
                break;
            }
            log_.phase(report->settled ? "settled" : "exited",
                       {{"exitCode", std::to_string(report->exit_code)},
                        {"signalled", std::to_string(report->signalled)},
                        {"settleMs", std::to_string(report->settle_ms)},
                        {"helperPeakRssKiB", std::to_string(report->peak_rss_kib)}});
            note_usage(*report);
            log_masking(*report);
            co_return *report;
        }
    }
    // Settling failed or ran out of time: destroy, within what is left of the budget — unless something
    // outside explains it. A paused container is frozen, not lost: it is left paused for whoever paused it.
    if (auto fault = co_await env_.diagnose_outside()) {
        log_.error(fault->message + (fault->frozen
                                         ? "; it stayed paused for the whole teardown budget, so it "
                                           "is left paused, not destroyed"
                                         : "; nothing is destroyed"));
        // Its session is let go (a frozen helper never ends it): resumed, the helper finds its input closed
        // and settles the subject itself.
        session_->kill();
        co_return std::nullopt;
    }
    co_await destroy_by(final_deadline);
    co_return std::nullopt;
}

asio::awaitable<void> trial::destroy_by(clock_type::time_point until) {
    log_.phase("destroy");
    session_->kill();
    const auto left = std::chrono::duration_cast<milliseconds>(until - clock_type::now());
    co_await env_.destroy(pgid_, std::max(left, milliseconds(1)));
}

asio::awaitable<std::string> trial::recover(std::string what) {
    // Within the trial's one teardown deadline: started here if nothing started it (the supervisor vanished
    // while the subject ran), else what a settle before us left of it.
    const auto now = clock_type::now();
    const auto final_deadline = teardown_.start(now);
    log_.phase("recover", {{"settleLeftMs", std::to_string(teardown_.settle_left(now).count())}});
    // The backend's own waits (an engine that stalls) end with the settle span, whatever they are.
    asio::steady_timer settle_span(executor_, teardown_.settle_by(now));
    auto raced = co_await (env_.recover(pgid_, scope_path_, teardown_.settle_left(now)) ||
                           settle_span.async_wait(as_tuple(use_awaitable)));
    if (raced.index() == 1) {
        log_.error("the recovery did not finish within the settle span");
    }
    const auto outcome = raced.index() == 0 ? std::get<0>(raced) : recovery::failed;
    // A root supervisor publishes the artifacts only at the end: the one that vanished left them staged.
    const std::string staged =
        root_helper_ && pgid_ ? "; what the subject wrote so far is in " + env_.artifacts_dir() + "/" +
                                    std::string(contracts::staging_directory_prefix) + "* (never published)"
                              : std::string();
    if (outcome == recovery::settled || outcome == recovery::failed) {
        // The container runs as it did: only the engine's evidence (an OOM kill) replaces the guess.
        if (auto fault = co_await env_.diagnose_outside()) {
            what = "vanished: " + fault->message;
        }
    }
    switch (outcome) {
    case recovery::settled:
        log_.phase("recovered", {{"how", "cancel without the supervisor"}});
        co_return "the supervisor " + what +
            "; the subject was stopped through a fresh cancel, the environment is intact" + staged;
    case recovery::out_of_memory:
        log_.phase("recovered", {{"how", "environment out of memory"}});
        co_return "the environment ran out of memory while the subject ran: the kernel killed its main "
                  "process (the engine records OOMKilled); nothing was left to stop, so it is left as it is "
                  "for inspection" +
            staged;
    case recovery::environment_gone:
        log_.phase("recovered", {{"how", "environment no longer running"}});
        co_return "the environment was stopped or removed from outside while the subject ran (its engine "
                  "says it no longer runs); nothing was left to stop, so it is left as it is for inspection" +
            staged;
    case recovery::restarted:
        log_.phase("recovered", {{"how", "environment restarted"}});
        co_return "the environment was restarted from outside while the subject ran (its engine records a "
                  "new start); the subject's processes ended with the restart, nothing was left to stop, and "
                  "the environment is left as it is" +
            staged;
    case recovery::paused:
        session_->kill(); // as above: resumed, the helper settles on its closed input
        log_.phase("recovered", {{"how", "environment paused"}});
        co_return "the environment was paused from outside (docker pause) and stayed paused through the "
                  "teardown budget; its processes are frozen, not stopped, and it is left paused, not "
                  "destroyed" +
            staged;
    case recovery::engine_unreachable:
        session_->kill();
        log_.phase("recovered", {{"how", "engine unreachable"}});
        co_return "the Docker engine stopped answering while the subject ran and did not come back within "
                  "the teardown budget: the subject's state is unknown (it may still be running), and "
                  "nothing was stopped or destroyed" +
            staged;
    case recovery::failed:
        break;
    }
    co_await destroy_by(final_deadline);
    co_return "the supervisor " + what +
        " and the subject could not be settled without it; the environment was destroyed";
}

asio::awaitable<trial_outcome> trial::cancelled(const contracts::execute_request& request, int signal) {
    host_teardown_ = host_teardown_ || signal == SIGINT;
    const bool framework = !host_teardown_;
    const std::string reason = framework ? "framework-timeout" : "host-teardown";
    auto report = co_await settle(reason);
    // A subject that finished before the cancellation took hold is reported as it finished, even under host
    // teardown; one stopped by us is reported as a framework timeout (its frame, if it printed one while
    // stopping, passes through), and not at all under host teardown.
    const bool terminal = report && !report->settled;
    std::optional<contracts::executed_message> executed;
    if (terminal) {
        executed = contracts::executed_message{config_.token, contracts::termination::exited,
                                               report->exit_code, report->stdout_text, report->diagnostic};
    } else if (!host_teardown_) {
        const auto missing = request.capture_stdout
                                 ? contracts::diagnostic::over(contracts::category::result_frame_missing, "")
                                 : contracts::diagnostic::none();
        executed = contracts::executed_message{
            config_.token, contracts::termination::framework_timeout, contracts::framework_timeout_exit_code,
            report ? report->stdout_text : std::string(), report ? report->diagnostic : missing};
    }
    std::string executed_line = executed ? contracts::serialize(*executed) : std::string();
    bool sent = false;
    if (executed && !executed_sent_) {
        sent = co_await send_orchestrator(std::move(executed_line));
    }
    if (sent) {
        executed_sent_ = true;
        log_.phase("executed", {{"termination", std::string(contracts::to_string(executed->termination))}});
        // Give the orchestrator's `verify` the time the original gave it before closing.
        const auto linger = clock_type::now() + linger_after_cancel;
        while (true) {
            auto e = co_await next(linger);
            if (!e || e->what == event::kind::orchestrator_line ||
                e->what == event::kind::orchestrator_closed) {
                break;
            }
        }
    }
    co_return outcome(host_teardown_ ? exit_host_teardown : exit_cancelled,
                      host_teardown_ ? "host teardown" : "framework timeout");
}

} // namespace

asio::awaitable<trial_outcome> run_trial(const trial_config& config, backend& env, phase_log& log) {
    auto executor = co_await asio::this_coro::executor;
    auto t = std::make_shared<trial>(config, env, log, executor);
    co_return co_await t->run();
}

} // namespace maka_eval::relay
