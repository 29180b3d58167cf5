// The trial state machine (see trial.hpp for its phases). Every source of events — orchestrator lines,
// helper messages, signals — is read by its own coroutine into one queue; the phase in charge takes events
// from it one at a time, with a timer wherever a wait has a bound, and hands the events every phase shares
// to `on_shared`. One thread, no locks.
#include "relay/trial/trial.hpp"

#include "contracts/digest.hpp"
#include "contracts/limits.hpp"
#include "contracts/name_table.hpp"
#include "contracts/orchestrator_messages.hpp"
#include "contracts/proc_status.hpp"
#include "contracts/session_messages.hpp"
#include "contracts/wire_json.hpp"
#include "policy/egress_gate.hpp"
#include "relay/support/event_queue.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/support/relay_clock.hpp"
#include "relay/support/tcp_endpoints.hpp"
#include "relay/support/utc_time.hpp"
#include "relay/trial/recovery_report.hpp"
#include "relay/trial/subject_request.hpp"
#include "relay/trial/subject_stdin.hpp"
#include "relay/trial/teardown_budget.hpp"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

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

namespace {

using asio::as_tuple;
using asio::use_awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
using clock_type = relay_clock; // tests move it (relay_clock.hpp)
using std::chrono::milliseconds;

struct event {
    enum class kind {
        orchestrator_line,
        orchestrator_closed,
        orchestrator_bad,
        helper_message,
        helper_closed,
        signal,
        subject_input,  // run -i / -t: bytes of the relay's stdin for the subject (`text`), or its end
        window_changed, // run -t: the relay's terminal was resized (SIGWINCH)
    };
    kind what = kind::orchestrator_closed;
    std::string text; // the orchestrator's line, or what was wrong
    contracts::session_message message;
    int signal = 0;
    bool eof = false; // subject_input: the relay's stdin ended
};

constexpr auto connect_timeout = milliseconds(30'000);
constexpr auto hello_timeout = milliseconds(120'000);
constexpr auto write_timeout = milliseconds(30'000);
// After `executed` on the cancellation path the original closed within about a second (its cleanup exec);
// closing sooner could make the orchestrator's `verify` meet a closed socket.
constexpr auto linger_after_cancel = milliseconds(1'000);

// Why the trial is settling: what follows once the subject is stopped (or could not be).
enum class settle_cause {
    none,           // not settling
    cancellation,   // SIGTERM/SIGHUP (framework timeout) or SIGINT (host teardown)
    transport_lost, // the orchestrator spoke or went away while the subject ran
};

class trial : public std::enable_shared_from_this<trial> {
  public:
    trial(const trial_config& config, backend& env, phase_log& log, const asio::any_io_executor& executor)
        : config_(config), env_(env), log_(log), executor_(executor), events_(executor), socket_(executor),
          signals_(executor, SIGTERM, SIGINT, SIGHUP), stop_latch_(executor, clock_type::time_point::max()),
          teardown_(config.teardown_budget), input_credit_(executor, clock_type::time_point::max()),
          time_limit_(executor, clock_type::time_point::max()), window_(executor) {}

    asio::awaitable<trial_outcome> run();

  private:
    // The phases (trial.hpp), one function each; each returns the phase that follows.
    asio::awaitable<trial_phase> step();
    asio::awaitable<trial_phase> connect();
    asio::awaitable<trial_phase> open_session();
    asio::awaitable<trial_phase> gate();
    asio::awaitable<trial_phase> offer();
    asio::awaitable<trial_phase> start();
    asio::awaitable<trial_phase> supervise();
    asio::awaitable<trial_phase> settle();
    asio::awaitable<trial_phase> recover();
    asio::awaitable<trial_phase> await_verify();
    asio::awaitable<trial_phase> linger();
    // The orchestrator's next line as a `kind` message with this trial's token (its text wiped once parsed);
    // meanwhile the events every phase shares go to `on_shared`. The phase that follows instead when the
    // trial ends first, or the line is unreadable (transport loss, as in the original) or refused.
    asio::awaitable<std::variant<trial_phase, boost::json::object>>
    orchestrator_message(std::string_view kind);
    // The events every phase shares — a signal, the orchestrator gone, the helper session ended — answered
    // in one place for the phase in charge; nullopt: the phase goes on.
    asio::awaitable<std::optional<trial_phase>> on_shared(const event& e);
    // The helper's own messages while the subject runs; nullopt: the phase goes on.
    asio::awaitable<std::optional<trial_phase>> on_supervised(const contracts::session_message& message);
    // What settling ends in, once the subject is stopped (its report) or could not be (nullopt).
    asio::awaitable<trial_phase> after_settle(std::optional<contracts::report_message> report);

    asio::awaitable<void> read_orchestrator();
    asio::awaitable<void> read_helper();
    asio::awaitable<void> watch_signals();
    // run -i / -t (subject_stdin.hpp): the relay's stdin read while the helper has room for it; the escape
    // on a terminal; the terminal's size on SIGWINCH. --timeout: the limit's timer.
    asio::awaitable<void> forward_input();
    asio::awaitable<void> watch_window();
    asio::awaitable<void> watch_time_limit();
    // A cancellation from inside the relay (the time limit, the terminal's escape), as SIGTERM's: the
    // subject settled within the budget, `executed` says framework_timeout; `why` ends the summary.
    void cancel_as_timeout(std::string why, const std::string& phase);
    // The first cause to stop (a signal, or one of the above) is recorded and ends what unless_signalled
    // races; false when one came before.
    bool begin_stopping(int sig);
    asio::awaitable<bool> send_window_size();
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
    // The supervisor went silent: waits for a paused environment, else recovers.
    asio::awaitable<trial_phase> on_silence();
    // The last resort: the helper is ended and the environment destroyed, within what is left until `until`.
    asio::awaitable<void> destroy_by(clock_type::time_point until);
    void finish();
    void log_report(bool settling, const contracts::report_message& report);
    // What a signed result says of the subject: argv as a digest, its variables' and credentials' names.
    void record_subject(const contracts::execute_request& request);

    trial_phase end(int code, std::string message = {}) {
        outcome_ = {code, std::move(message), std::nullopt, {}, {}, {}};
        return trial_phase::done;
    }
    trial_phase cancelled_before_start(int signal) {
        return end(signal == SIGINT ? exit_host_teardown : exit_cancelled,
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
    relay_timer stop_latch_;
    trial_phase phase_ = trial_phase::connecting;
    trial_outcome outcome_;
    trial_record record_; // what a signed result says (trial.hpp), whatever outcome_ becomes
    int first_signal_ = 0;
    // What the phases hand on: the helper's hello, the orchestrator's execute, why settling.
    std::optional<contracts::hello_message> hello_;
    std::optional<contracts::execute_request> request_;
    settle_cause settling_for_ = settle_cause::none;
    std::string vanished_ = "vanished without a report (killed from inside the environment?)";
    bool paused_said_ = false;   // the `paused` phase is said once
    bool kill_now_sent_ = false; // a second SIGINT while settling asks for KILL at once, once
    std::unique_ptr<helper_session> session_;
    std::optional<int> pgid_;
    std::string scope_path_;
    // The supervisor's liveness: its heartbeat interval (0: it sends none) and when it last said anything.
    milliseconds heartbeat_{0};
    clock_type::time_point last_heard_ = clock_type::now();
    bool host_teardown_ = false;
    bool root_helper_ = false;
    milliseconds term_grace_{0}; // as fitted into the budget and sent in `run`
    // Why this trial's subject will own the environment (hello says it runs as root or with capabilities);
    // empty when it will not. Recorded by the backend before `run` is sent.
    std::string subject_owns_because_;
    std::string trusted_reuse_; // the earlier owner the operator accepted (--trust-reused-container)
    bool executed_sent_ = false;
    // One deadline for the whole teardown: settle, recovery and destroy share it (teardown_budget.hpp).
    teardown_deadline teardown_;
    std::optional<contracts::subject_usage> usage_;
    std::string stderr_tail_;
    // run -i / -t: the bytes sent to the helper and not yet taken (at most input_window_bytes); the
    // forwarder waits on input_credit_ while the window is full.
    std::unique_ptr<subject_stdin> stdin_;
    std::uint64_t input_in_flight_ = 0;
    relay_timer input_credit_;
    relay_timer time_limit_;
    asio::signal_set window_;
    std::string cancelled_because_; // a cancellation from inside the relay: why
};

asio::awaitable<void> trial::watch_signals() {
    auto self = shared_from_this();
    while (true) {
        auto [ec, sig] = co_await signals_.async_wait(as_tuple(use_awaitable));
        if (ec) {
            co_return;
        }
        (void)begin_stopping(sig);
        // SIGHUP (a closed terminal, a process supervisor's hang-up) is a cancellation as SIGTERM is: the
        // subject settled within the budget and reported; only SIGINT means host teardown.
        log_.phase("signal", {{"signal", sig == SIGINT   ? "SIGINT"
                                         : sig == SIGHUP ? "SIGHUP"
                                                         : "SIGTERM"},
                              {"means", sig == SIGINT ? "host teardown" : "cancellation"}});
        post({event::kind::signal, {}, {}, sig == SIGINT ? SIGINT : SIGTERM});
    }
}

bool trial::begin_stopping(int sig) {
    if (first_signal_ != 0) {
        return false;
    }
    first_signal_ = sig;
    stop_latch_.expires_at(clock_type::time_point::min());
    return true;
}

void trial::cancel_as_timeout(std::string why, const std::string& phase) {
    if (!begin_stopping(SIGTERM)) {
        return; // already cancelled: the first cause is the one reported
    }
    log_.phase(phase, {{"why", why}, {"means", "cancellation"}});
    cancelled_because_ = std::move(why);
    post({event::kind::signal, {}, {}, SIGTERM});
}

asio::awaitable<void> trial::watch_time_limit() {
    auto self = shared_from_this();
    time_limit_.expires_after(*config_.time_limit);
    auto [ec] = co_await time_limit_.async_wait(as_tuple(use_awaitable));
    if (!ec && phase_ != trial_phase::done) {
        cancel_as_timeout("the time limit of " + config_.time_limit_text + " (--timeout) elapsed", "timeout");
    }
}

asio::awaitable<void> trial::watch_window() {
    auto self = shared_from_this();
    while (true) {
        auto [ec, sig] = co_await window_.async_wait(as_tuple(use_awaitable));
        if (ec) {
            co_return;
        }
        post({event::kind::window_changed, {}, {}, sig});
    }
}

asio::awaitable<bool> trial::send_window_size() {
    const auto size = window_size(config_.terminal_fd);
    if (!size) {
        co_return true;
    }
    co_return co_await session_->send(
        contracts::serialize(contracts::resize_message{size->first, size->second}));
}

asio::awaitable<void> trial::forward_input() {
    auto self = shared_from_this();
    escape_watch escape;
    const bool watching = config_.terminal_fd >= 0;
    while (stdin_) {
        while (input_in_flight_ + contracts::input_chunk_bytes > contracts::input_window_bytes) {
            input_credit_.expires_at(clock_type::time_point::max());
            (void)co_await input_credit_.async_wait(as_tuple(use_awaitable)); // cancelled by `input-taken`
            if (!stdin_ || phase_ == trial_phase::done) {
                co_return;
            }
        }
        auto chunk = co_await stdin_->read(contracts::input_chunk_bytes);
        if (!stdin_) {
            co_return; // the trial ended while the read waited
        }
        if (!chunk) {
            post({event::kind::subject_input, {}, {}, 0, true});
            co_return;
        }
        std::string data = watching ? escape.pass(*chunk) : std::move(*chunk);
        if (!data.empty()) {
            input_in_flight_ += data.size();
            post({event::kind::subject_input, std::move(data), {}, 0, false});
        }
        if (escape.escaped()) {
            cancel_as_timeout("the terminal's escape (Ctrl-] three times)", "escape");
            co_return;
        }
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
        if (auto* output = std::get_if<contracts::output_message>(&*message)) {
            if (output->size > 0) {
                // Its bytes follow the line, raw.
                auto bytes = co_await session_->receive_bytes(static_cast<std::size_t>(output->size));
                if (!bytes) {
                    post({event::kind::helper_closed, {}, {}, 0});
                    co_return;
                }
                output->data = std::move(*bytes);
            }
            if (config_.follow != nullptr) {
                config_.follow->deliver(*output);
            }
            continue; // shown, never part of the trial's record
        }
        post({event::kind::helper_message, {}, std::move(*message), 0});
    }
}

asio::awaitable<bool> trial::send_orchestrator(std::string line) {
    relay_timer timer(executor_, write_timeout);
    auto done = co_await (asio::async_write(socket_, asio::buffer(line), as_tuple(use_awaitable)) ||
                          timer.async_wait(as_tuple(use_awaitable)));
    co_return done.index() == 0 && !std::get<0>(std::get<0>(done));
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
    while (phase_ != trial_phase::done) {
        phase_ = co_await step();
    }
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
    co_return result;
}

asio::awaitable<trial_phase> trial::step() {
    switch (phase_) {
    case trial_phase::connecting:
        co_return co_await connect();
    case trial_phase::opening_session:
        co_return co_await open_session();
    case trial_phase::gating:
        co_return co_await gate();
    case trial_phase::offering:
        co_return co_await offer();
    case trial_phase::starting:
        co_return co_await start();
    case trial_phase::supervising:
        co_return co_await supervise();
    case trial_phase::settling:
        co_return co_await settle();
    case trial_phase::recovering:
        co_return co_await recover();
    case trial_phase::reporting:
        co_return co_await await_verify();
    case trial_phase::lingering:
        co_return co_await linger();
    case trial_phase::done:
        break;
    }
    co_return trial_phase::done;
}

void trial::finish() {
    boost::system::error_code ignored;
    if (session_) {
        session_->close_input();
    }
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    signals_.cancel(ignored);
    window_.cancel(ignored);
    time_limit_.cancel();
    input_credit_.cancel();
    stdin_.reset(); // a read still pending on the relay's stdin ends with it
    events_.close();
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
    const auto hello_deadline = clock_type::now() + hello_timeout;
    while (!hello_) {
        auto e = co_await next(hello_deadline);
        if (!e) {
            co_return end(
                exit_environment,
                "Maka Eval could not resolve the task working directory (the helper did not answer)");
        }
        if (e->what == event::kind::helper_message) {
            if (const auto* hello = std::get_if<contracts::hello_message>(&e->message)) {
                hello_ = *hello;
                record_.helper_version = hello->helper_version;
                record_.uid = hello->uid;
                record_.gid = hello->gid;
                record_.cwd = hello->cwd;
            }
            continue;
        }
        const auto shared = co_await on_shared(*e);
        if (shared) {
            co_return *shared;
        }
    }
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

// gating: the sidecar's namespace, then the judgement (capabilities before namespaces), then the pin;
// before `ready`, so that a refusal means the orchestrator never sees `ready`. A signal ends it at once.
asio::awaitable<trial_phase> trial::gate() {
    auto judged = [this]() -> asio::awaitable<std::optional<std::string>> {
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
    };
    auto refusal = co_await unless_signalled(judged());
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
    auto message = co_await orchestrator_message("execute");
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

asio::awaitable<std::variant<trial_phase, boost::json::object>>
trial::orchestrator_message(std::string_view kind) {
    while (true) {
        auto e = co_await next(std::nullopt);
        if (!e) {
            co_return end(exit_internal, "event channel closed");
        }
        if (e->what != event::kind::orchestrator_line) {
            const auto shared = co_await on_shared(*e);
            if (shared) {
                co_return *shared;
            }
            continue;
        }
        auto object = contracts::parse_object(e->text, contracts::control_line_limit_bytes);
        if (!object) {
            // Unreadable or non-object JSON is transport loss in the original, not a refusal.
            co_return end(exit_transport_lost,
                          "Maka Eval relay message was unavailable: " + object.error().message());
        }
        if (auto valid = contracts::require_message(*object, config_.token, kind); !valid) {
            co_return end(exit_refused, valid.error().message());
        }
        co_return std::move(*object);
    }
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
    // Fitted now, so that the helper's settle (also the one the dead-man switch or a root cancel starts)
    // ends within the budget.
    const auto fitted = fit_graces(config_.teardown_budget, config_.graces);
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
    co_return trial_phase::supervising;
}

// supervising: the subject runs until its report, a shared event, or three missed heartbeats (the
// supervisor stopped — a root subject can SIGSTOP it — or hung).
asio::awaitable<trial_phase> trial::supervise() {
    while (true) {
        std::optional<clock_type::time_point> quiet_until;
        if (heartbeat_.count() > 0) {
            quiet_until = last_heard_ + 3 * heartbeat_;
        }
        auto e = co_await next(quiet_until);
        if (!e && quiet_until && clock_type::now() >= last_heard_ + 3 * heartbeat_) {
            co_return co_await on_silence();
        }
        if (!e) {
            if (quiet_until && events_.is_open()) {
                continue; // a heartbeat arrived meanwhile: wait again from it
            }
            co_return end(exit_internal, "event channel closed");
        }
        std::optional<trial_phase> then;
        if (e->what == event::kind::helper_message) {
            then = co_await on_supervised(e->message);
        } else if (e->what == event::kind::subject_input) {
            contracts::input_message input{std::move(e->text), e->eof};
            (void)co_await session_->send(contracts::serialize(input));
        } else if (e->what == event::kind::window_changed) {
            (void)co_await send_window_size();
        } else {
            then = co_await on_shared(*e);
        }
        if (then) {
            co_return *then;
        }
    }
}

asio::awaitable<std::optional<trial_phase>> trial::on_supervised(const contracts::session_message& message) {
    if (const auto* started = std::get_if<contracts::started_message>(&message)) {
        pgid_ = static_cast<int>(started->pgid);
        log_.phase("started", {{"pid", std::to_string(started->pid)}});
        if (config_.input_fd >= 0 && !stdin_) {
            stdin_ = std::make_unique<subject_stdin>(executor_, config_.input_fd);
            spawn(forward_input());
        }
        co_return std::nullopt;
    }
    if (const auto* taken = std::get_if<contracts::input_taken_message>(&message)) {
        input_in_flight_ -= std::min<std::uint64_t>(input_in_flight_, taken->bytes);
        input_credit_.cancel(); // the forwarder may read on
        co_return std::nullopt;
    }
    if (const auto* failed = std::get_if<contracts::error_message>(&message)) {
        if (failed->code != contracts::helper_fault::artifacts_unavailable &&
            failed->code != contracts::helper_fault::spawn_failed) {
            log_.error("helper: " + failed->message);
            co_return std::nullopt;
        }
        // A same-uid helper's failure may be one a root helper would not have had: say why it was not root.
        const auto why = env_.not_root_because();
        co_return end(
            exit_environment,
            failed->message +
                (why.empty() ? "" : " (the helper ran as the subject's user, not as root: " + why + ")"));
    }
    const auto* report = std::get_if<contracts::report_message>(&message);
    if (report == nullptr) {
        co_return std::nullopt;
    }
    log_report(false, *report);
    // Artifacts are already in place (the helper streamed them): `executed` follows at once.
    const contracts::executed_message executed{config_.token, contracts::termination::exited,
                                               report->exit_code, report->stdout_text, report->diagnostic};
    std::string executed_line = contracts::serialize(executed);
    if (config_.signed_result) {
        record_.executed_line = executed_line;
    }
    const bool sent = co_await send_orchestrator(std::move(executed_line));
    if (!sent) {
        co_return end(exit_transport_lost, "Maka Eval relay transport closed before result");
    }
    executed_sent_ = true;
    log_.phase("executed");
    // What the subject left running is left alone: the verifier scores the environment as is.
    co_return trial_phase::reporting;
}

asio::awaitable<trial_phase> trial::on_silence() {
    const auto silent = std::chrono::duration_cast<milliseconds>(clock_type::now() - last_heard_);
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

asio::awaitable<std::optional<trial_phase>> trial::on_shared(const event& e) {
    const bool before_start = phase_ == trial_phase::opening_session || phase_ == trial_phase::offering;
    switch (e.what) {
    case event::kind::signal:
        host_teardown_ = host_teardown_ || e.signal == SIGINT;
        if (before_start) {
            co_return cancelled_before_start(e.signal);
        }
        if (phase_ == trial_phase::supervising) {
            settling_for_ = settle_cause::cancellation;
            co_return trial_phase::settling;
        }
        if (phase_ == trial_phase::settling && e.signal == SIGINT && !kill_now_sent_) {
            kill_now_sent_ = true;
            log_.phase("kill-now", {{"why", "SIGINT while stopping"}});
            std::string kill =
                contracts::serialize(contracts::cancel_request{std::string(contracts::kill_now_reason)});
            (void)co_await session_->send(std::move(kill));
        }
        if (phase_ == trial_phase::reporting) {
            // `executed` was already sent: nothing more to report, the cancellation still propagates.
            co_return end(e.signal == SIGINT ? exit_host_teardown : exit_cancelled,
                          "cancelled after executed");
        }
        co_return std::nullopt;
    case event::kind::orchestrator_line:
    case event::kind::orchestrator_closed:
    case event::kind::orchestrator_bad:
        if (phase_ == trial_phase::offering) {
            co_return e.what == event::kind::orchestrator_bad
                ? end(exit_transport_lost, "Maka Eval relay message was unavailable: " + e.text)
                : end(exit_transport_lost, "the orchestrator closed before execute");
        }
        if (phase_ == trial_phase::supervising) {
            // Any control line, EOF or unreadable input while the subject runs is transport loss.
            log_.error(e.what == event::kind::orchestrator_line ? "control line before the subject finished"
                                                                : "orchestrator: " + e.text);
            settling_for_ = settle_cause::transport_lost;
            co_return trial_phase::settling;
        }
        if (phase_ == trial_phase::reporting && e.what != event::kind::orchestrator_line) {
            co_return end(exit_transport_lost, "the orchestrator closed after executed without verify");
        }
        if (phase_ == trial_phase::lingering && e.what != event::kind::orchestrator_bad) {
            co_return trial_phase::done; // its `verify`, or its close: nothing more to wait for
        }
        co_return std::nullopt; // settling: nothing it says changes how the subject is stopped
    case event::kind::helper_closed:
        if (phase_ == trial_phase::opening_session) {
            co_return end(
                exit_environment,
                "Maka Eval could not resolve the task working directory (the helper did not answer)");
        }
        if (phase_ == trial_phase::offering) {
            co_return end(exit_environment, "the helper session ended before execute");
        }
        if (phase_ == trial_phase::supervising || phase_ == trial_phase::settling) {
            // Killed from inside (a root subject can), or the container was killed, or the engine went away:
            // settle without it, and destroy only if that fails.
            log_.error(phase_ == trial_phase::settling
                           ? "the helper session ended without a report while settling"
                           : "the helper session ended without a report");
            co_return trial_phase::recovering;
        }
        co_return std::nullopt;
    case event::kind::helper_message:
    case event::kind::subject_input:  // outside `supervising` the subject is not there to take it
    case event::kind::window_changed: // nor a size
        break;
    }
    co_return std::nullopt;
}

// settling: a cancel to the helper, its report awaited until the settle span ends; past it, destroy
// within what is left of the budget, unless something outside explains it.
asio::awaitable<trial_phase> trial::settle() {
    const auto now = clock_type::now(); // one reading: the deadlines and the logged span agree
    const auto settle_deadline = teardown_.settle_by(now);
    const std::string reason = settling_for_ == settle_cause::transport_lost ? "transport-lost"
                               : host_teardown_                              ? "host-teardown"
                                                                             : "framework-timeout";
    log_.phase("settle",
               {{"reason", reason}, {"settleLeftMs", std::to_string(teardown_.settle_left(now).count())}});
    // Even if the helper can no longer be asked, its report may already be on the way: keep listening.
    std::string cancel = contracts::serialize(contracts::cancel_request{reason});
    (void)co_await session_->send(std::move(cancel));
    log_.phase("stopping",
               {{"message", "TERM sent to the subject, KILL in " + std::to_string(term_grace_.count()) +
                                " ms if it is still running; Ctrl-C (SIGINT) again to KILL now"}});
    std::optional<contracts::report_message> settled;
    while (true) {
        auto e = co_await next(settle_deadline);
        if (!e) {
            break;
        }
        if (e->what != event::kind::helper_message) {
            const auto shared = co_await on_shared(*e);
            if (shared) {
                co_return *shared;
            }
            continue;
        }
        if (const auto* started = std::get_if<contracts::started_message>(&e->message)) {
            pgid_ = static_cast<int>(started->pgid);
        } else if (const auto* report = std::get_if<contracts::report_message>(&e->message)) {
            if (report->settled && !report->quiesced) {
                log_.error("the subject's processes did not quiesce");
                break;
            }
            log_report(true, *report);
            settled = *report;
            co_return co_await after_settle(std::move(settled));
        }
    }
    // Settling failed or ran out of time. A paused container is frozen, not lost: it is left paused for
    // whoever paused it; an engine that is down has destroyed nothing.
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
    co_return co_await after_settle(std::move(settled));
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
    std::string executed_line = contracts::serialize(*executed);
    if (config_.signed_result) {
        record_.executed_line = executed_line;
    }
    const bool sent = co_await send_orchestrator(std::move(executed_line));
    if (!sent) {
        co_return ended;
    }
    executed_sent_ = true;
    log_.phase("executed", {{"termination", std::string(contracts::to_string(executed->termination))}});
    co_return trial_phase::lingering;
}

// lingering: the time the original gave the orchestrator's `verify` before closing, after a cancel.
asio::awaitable<trial_phase> trial::linger() {
    const auto until = clock_type::now() + linger_after_cancel;
    while (true) {
        auto e = co_await next(until);
        if (!e) {
            co_return trial_phase::done;
        }
        const auto shared = co_await on_shared(*e);
        if (shared) {
            co_return *shared;
        }
    }
}

// reporting: `executed` sent after the subject's own end; the orchestrator's `verify` closes the trial.
asio::awaitable<trial_phase> trial::await_verify() {
    const auto message = co_await orchestrator_message("verify");
    if (const auto* ended = std::get_if<trial_phase>(&message)) {
        co_return *ended;
    }
    log_.phase("verify");
    co_return end(exit_success);
}

asio::awaitable<void> trial::destroy_by(clock_type::time_point until) {
    log_.phase("destroy");
    record_.ending = "destroyed";
    session_->kill();
    co_await env_.destroy(pgid_, left_until(until));
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
    // A root supervisor publishes the artifacts only at the end: the one that vanished left them staged.
    const std::string staged =
        root_helper_ && pgid_ ? "; what the subject wrote so far is in " + env_.artifacts_dir() + "/" +
                                    std::string(contracts::staging_directory_prefix) + "* (never published)"
                              : std::string();
    std::string what = vanished_;
    if (outcome == recovery::settled || outcome == recovery::failed) {
        // The environment runs as it did: only the engine's evidence (an OOM kill) replaces the guess.
        const auto fault = co_await env_.diagnose_outside();
        if (fault) {
            what = "vanished: " + fault->message;
        }
    }
    const auto report = report_recovery(outcome, what, staged);
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

} // namespace

asio::awaitable<trial_outcome> run_trial(const trial_config& config, backend& env, phase_log& log) {
    auto executor = co_await asio::this_coro::executor;
    auto t = std::make_shared<trial>(config, env, log, executor);
    co_return co_await t->run();
}

} // namespace maka_eval::relay
