// The trial's state machine, inside relay/trial only (run_trial in trial.hpp is its one door).
//
// Every source of events — orchestrator lines, helper messages, signals, the relay's stdin — is read by its
// own coroutine into one queue (trial_sources.cpp). One loop (trial::run) hands each event to the phase in
// charge: a phase is its work on entry, its reaction to an event, and its reaction to its deadline passing
// (trial.cpp, one table row per phase); each reaction names the phase that follows. One thread, no locks.
#pragma once

#include "contracts/session_messages.hpp"
#include "relay/support/event_queue.hpp"
#include "relay/support/relay_clock.hpp"
#include "relay/trial/subject_request.hpp"
#include "relay/trial/subject_stdin.hpp"
#include "relay/trial/teardown_budget.hpp"
#include "relay/trial/trial.hpp"

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>

namespace maka_eval::relay::detail {

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
          to_helper_ready_(executor, clock_type::time_point::max()),
          time_limit_(executor, clock_type::time_point::max()), window_(executor) {}

    asio::awaitable<trial_outcome> run();

  private:
    // A phase: its work on entry (the phase that follows; itself to wait for events), its reaction to an
    // event, and to its deadline passing (a phase that never waits has neither).
    struct phase_row {
        asio::awaitable<trial_phase> (trial::*enter)();
        asio::awaitable<trial_phase> (trial::*react)(event& e);
        asio::awaitable<trial_phase> (trial::*expired)();
        std::optional<clock_type::time_point> (trial::*deadline)() const;
    };
    static const phase_row& row_of(trial_phase phase);

    // trial.cpp: the phases, in their order (trial.hpp says what each is).
    asio::awaitable<trial_phase> connect();
    asio::awaitable<trial_phase> open_session();
    asio::awaitable<trial_phase> on_opening(event& e);
    asio::awaitable<trial_phase> hello_missing();
    asio::awaitable<trial_phase> gate();
    asio::awaitable<trial_phase> offer();
    asio::awaitable<trial_phase> on_offering(event& e);
    asio::awaitable<trial_phase> start();
    asio::awaitable<trial_phase> on_supervising(event& e);
    asio::awaitable<trial_phase> on_silence();
    asio::awaitable<trial_phase> on_supervised(const contracts::session_message& message);
    asio::awaitable<trial_phase> settle();
    asio::awaitable<trial_phase> on_settling(event& e);
    asio::awaitable<trial_phase> settle_failed();
    asio::awaitable<trial_phase> after_settle(std::optional<contracts::report_message> report);
    asio::awaitable<trial_phase> recover();
    asio::awaitable<trial_phase> on_reporting(event& e);
    asio::awaitable<trial_phase> linger();
    asio::awaitable<trial_phase> on_lingering(event& e);
    asio::awaitable<trial_phase> linger_over();
    asio::awaitable<trial_phase> just_wait(); // a phase whose entry is only to wait
    [[nodiscard]] std::optional<clock_type::time_point> no_deadline() const { return std::nullopt; }
    [[nodiscard]] std::optional<clock_type::time_point> hello_deadline() const { return hello_deadline_; }
    [[nodiscard]] std::optional<clock_type::time_point> heartbeat_deadline() const;
    [[nodiscard]] std::optional<clock_type::time_point> settle_deadline() const { return settle_deadline_; }
    [[nodiscard]] std::optional<clock_type::time_point> linger_deadline() const { return linger_until_; }
    // The orchestrator's line as a `kind` message with this trial's token; else the phase that follows (the
    // trial ends: an unreadable line is transport loss, as in the original; a wrong one is refused).
    std::variant<trial_phase, boost::json::object> orchestrator_message(const std::string& line,
                                                                        std::string_view kind);
    // `executed` to the orchestrator (kept for a signed result); `says_how`: its phase line names the
    // termination (after a settle or a recovery).
    asio::awaitable<bool> send_executed(const contracts::executed_message& executed, bool says_how);
    // The last resort: the helper is ended and the environment destroyed, within what is left until `until`.
    asio::awaitable<void> destroy_by(clock_type::time_point until);

    // trial_preparation.cpp: what gating and starting work out before they act.
    asio::awaitable<std::optional<std::string>> judge_egress(); // nullopt: admitted; else the refusal
    run_placement place_run();
    settle_graces fit_graces_to_budget(); // logged when they had to shrink; kept as term_grace_

    // trial_sources.cpp: the event sources, the orchestrator's writes, the end.
    asio::awaitable<void> read_orchestrator();
    asio::awaitable<void> read_helper();
    asio::awaitable<void> watch_signals();
    // run -i / -t (subject_stdin.hpp): the relay's stdin read while the helper has room for it; the escape
    // on a terminal; the terminal's size on SIGWINCH. --timeout: the limit's timer.
    asio::awaitable<void> forward_input();
    asio::awaitable<void> watch_window();
    asio::awaitable<void> watch_time_limit();
    void send_window_size();
    // Every line to the helper after `run`, in order, through the one writer: a phase never waits on a
    // write, which a helper that stopped reading (it exited after its report, it is stopped) would hold for
    // ever; the trial's end closes the session under a write still pending.
    void to_helper(std::string line);
    asio::awaitable<void> write_to_helper();
    // A cancellation from inside the relay (the time limit, the terminal's escape), as SIGTERM's: the
    // subject settled within the budget, `executed` says framework_timeout; `why` ends the summary.
    void cancel_as_timeout(std::string why, const std::string& phase);
    // The first cause to stop (a signal, or one of the above) is recorded and ends what unless_signalled
    // races; false when one came before.
    bool begin_stopping(int sig);
    void post(event e) { events_.post(std::move(e)); }
    // Starts a reader; a failure it throws is reported, never silently dropped.
    void spawn(asio::awaitable<void> reader);
    asio::awaitable<bool> send_orchestrator(std::string line);
    void finish();

    // trial_report.cpp: what the trial records of the subject and logs of its report, and its outcome.
    trial_outcome conclude();
    asio::awaitable<std::string> what_vanished(recovery outcome);
    [[nodiscard]] std::string staged_note() const;
    void log_report(bool settling, const contracts::report_message& report);
    // What a signed result says of the subject: argv as a digest, its variables' and credentials' names.
    void record_subject(const contracts::execute_request& request);

    // Before the subject starts, a backend call (the session, the egress gate) may wait on an environment
    // that does not answer: a signal ends it at once (nullopt; the call is cancelled), so SIGTERM is honoured
    // at any point. The signal stays in the event queue as well.
    template <class T>
    asio::awaitable<std::optional<T>> unless_signalled(asio::awaitable<T> call) {
        using namespace asio::experimental::awaitable_operators;
        auto done = co_await (std::move(call) || stop_latch_.async_wait(asio::as_tuple(asio::use_awaitable)));
        if (done.index() == 1) {
            co_return std::nullopt;
        }
        co_return std::move(std::get<0>(done));
    }
    trial_phase end(int code, std::string message = {}) {
        outcome_ = {code, std::move(message), std::nullopt, {}, {}, {}};
        return trial_phase::done;
    }
    trial_phase cancelled_before_start(int signal);

    const trial_config& config_;
    backend& env_;
    phase_log& log_;
    asio::any_io_executor executor_;
    event_queue<event> events_;
    asio::ip::tcp::socket socket_;
    asio::signal_set signals_;
    // Expires at the first signal (and stays expired): what unless_signalled races a call against.
    relay_timer stop_latch_;
    trial_phase phase_ = trial_phase::connecting;
    trial_outcome outcome_;
    trial_record record_; // what a signed result says (trial.hpp), whatever outcome_ becomes
    int first_signal_ = 0;
    bool host_teardown_ = false; // a SIGINT came, in whatever phase
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
    bool root_helper_ = false;
    milliseconds term_grace_{0}; // as fitted into the budget and sent in `run`
    // Why this trial's subject will own the environment (hello says it runs as root or with capabilities);
    // empty when it will not. Recorded by the backend before `run` is sent.
    std::string subject_owns_because_;
    std::string trusted_reuse_; // the earlier owner the operator accepted (--trust-reused-container)
    bool executed_sent_ = false;
    // The waiting phases' bounds, set as each is entered.
    std::optional<clock_type::time_point> hello_deadline_;
    std::optional<clock_type::time_point> settle_deadline_;
    std::optional<clock_type::time_point> linger_until_;
    // One deadline for the whole teardown: settle, recovery and destroy share it (teardown_budget.hpp).
    teardown_deadline teardown_;
    std::optional<contracts::subject_usage> usage_;
    std::string stderr_tail_;
    // run -i / -t: the bytes sent to the helper and not yet taken (at most input_window_bytes); the
    // forwarder waits on input_credit_ while the window is full.
    std::unique_ptr<subject_stdin> stdin_;
    std::uint64_t input_in_flight_ = 0;
    relay_timer input_credit_;
    std::deque<std::string> to_helper_; // lines for the writer
    relay_timer to_helper_ready_;       // cancelled when a line is queued
    relay_timer time_limit_;
    asio::signal_set window_;
    std::string cancelled_because_; // a cancellation from inside the relay: why
};

} // namespace maka_eval::relay::detail
