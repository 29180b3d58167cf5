// Test support: the trial against a backend with nothing behind it, in this process, on the relay clock.
//
// `backend` is the relay's own interface (relay/trial/backend.hpp): the fake implements every call with
// the interface's own signature and answers as the test scripts it. The helper's side of the session is
// the test's too: it sees each message the trial sends and says what a helper would. The orchestrator is
// the real loopback one of `run` (relay/cli), over real TCP on 127.0.0.1. Where a real environment would
// make the trial wait (an engine that never answers, a helper that never reports), the fake moves the relay
// clock past the deadline instead (relay_clock.hpp), so each recovery branch and the teardown budget are
// reached through the real trial code in milliseconds.
#pragma once

#include "contracts/session_messages.hpp"
#include "relay/misbehaving_orchestrator.hpp"
#include "relay/support/event_queue.hpp"
#include "relay/trial/backend.hpp"
#include "relay/trial/trial.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

namespace maka_eval::test {

using relay::recovery;
using std::chrono::milliseconds;

// Time passes on the relay clock: `span` later, once the trial waits again (posted, so that a deadline the
// trial is about to set is set first).
void pass_time(const boost::asio::any_io_executor& executor, std::chrono::milliseconds span);

// The helper's side of the session.
class fake_helper {
  public:
    explicit fake_helper(const boost::asio::any_io_executor& executor)
        : executor_(executor), to_trial_(executor) {}
    // What a helper would say next.
    void say(const contracts::session_message& message);
    // The session ends without a report (the helper was killed, its exec ended).
    void vanish() { to_trial_.post(helper_line{true, {}}); }
    [[nodiscard]] boost::asio::any_io_executor executor() { return executor_; }

    // The test's helper: called with each message the trial sends, in order.
    std::function<void(const contracts::session_message&)> on_message;
    // Called when the trial first listens for what the helper says (its deadline for `hello` is set).
    std::function<void()> on_listen;
    std::vector<contracts::session_message> received;
    bool input_closed = false;
    bool killed = false;

  private:
    friend class fake_session;
    boost::asio::any_io_executor executor_;
    struct helper_line {
        bool end = false; // the session ends here
        std::string text;
    };
    relay::event_queue<helper_line> to_trial_;
};

struct fake_calls {
    std::optional<milliseconds> destroyed;  // the budget destroy was given
    std::optional<milliseconds> recovering; // the budget recover was given
    int diagnosed = 0;                      // diagnose_outside calls
    bool marked_owned = false;
};

class fake_backend : public relay::backend {
  public:
    fake_backend(const boost::asio::any_io_executor& executor, fake_helper& helper)
        : executor_(executor), helper_(helper) {}

    // The script.
    contracts::hello_message hello = default_hello();
    recovery recovers_as = recovery::settled;
    bool recovery_hangs = false; // recover never answers: the clock moves past its budget
    // What diagnose_outside says, call by call (the last one repeats); empty: nothing outside.
    std::vector<std::optional<relay::outside_fault>> outside;
    std::function<void()> on_diagnose; // called as diagnose_outside is asked (a container resumed then)
    std::string earlier;               // earlier_owner()
    bool says_hello = true;            // false: the session opens and the helper never says hello
    fake_calls calls;

    [[nodiscard]] static contracts::hello_message default_hello();

    // relay/trial/backend.hpp
    [[nodiscard]] std::string describe() const override { return "fake"; }
    boost::asio::awaitable<boost::system::result<std::unique_ptr<relay::helper_session>, relay::relay_error>>
    open_session() override;
    boost::asio::awaitable<boost::system::result<relay::exec_output, relay::relay_error>>
    run_helper_as_root(std::vector<std::string> args, std::chrono::milliseconds runs_for) override;
    boost::asio::awaitable<boost::system::result<std::string, relay::relay_error>>
    policy_namespace(std::string sidecar) override;
    boost::asio::awaitable<void> destroy(std::optional<int> subject_pgid,
                                         std::chrono::milliseconds budget) override;
    boost::asio::awaitable<recovery> recover(std::optional<int> subject_pgid, std::string scope,
                                             relay::recovery_window window) override;
    [[nodiscard]] std::string scope_path(const std::string& name) const override { return "/scope/" + name; }
    [[nodiscard]] std::string artifacts_dir() const override { return "/artifacts"; }
    boost::asio::awaitable<std::optional<relay::outside_fault>> diagnose_outside() override;
    [[nodiscard]] std::string earlier_owner() const override { return earlier; }
    void mark_owned_by_subject(const std::string& why) override;

  private:
    boost::asio::any_io_executor executor_;
    fake_helper& helper_;
};

// A report as a helper sends it: the subject exited with `code` (settled: stopped by a cancel).
[[nodiscard]] contracts::report_message report(std::int64_t code, bool settled = false);

// One trial: the loopback orchestrator serving `script`, the trial with `config` (host, port and token
// filled in), the fake environment scripted by `setup`.
struct fake_trial {
    relay::trial_outcome outcome;
    relay::transcript seen;
    std::string log;
    fake_calls calls;
    std::vector<contracts::session_message> received; // what the helper was sent
    bool session_killed = false;
    milliseconds elapsed{0}; // on the relay clock, moved or not
};
[[nodiscard]] fake_trial run_fake_trial(const std::function<void(fake_backend&, fake_helper&)>& setup,
                                        relay::trial_config config = {}, orchestrator_script script = {});

} // namespace maka_eval::test
