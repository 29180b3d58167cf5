// The fake environment (see fake_backend.hpp).
#include "relay/trial/fake_backend.hpp"

#include "relay/support/relay_clock.hpp"
#include "relay/trial/log.hpp"

#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::test {

void pass_time(const boost::asio::any_io_executor& executor, std::chrono::milliseconds span) {
    boost::asio::post(executor, [executor, span] {
        relay::relay_clock::advance(span);
        // A timer due before every other makes the reactor read the clock again (and from now on every
        // millisecond): one due merely now would queue behind the deadlines it just passed, unnoticed.
        auto kick = std::make_shared<relay::relay_timer>(executor, relay::relay_clock::time_point::min());
        kick->async_wait([kick](boost::system::error_code) {});
    });
}

void fake_helper::say(const contracts::session_message& message) {
    auto line = contracts::serialize(message);
    line.pop_back(); // the session's receive() gives lines without "\n"
    to_trial_.post(helper_line{false, std::move(line)});
}

// The trial's end of the session: what it sends goes to the test's helper, what the helper says comes back.
class fake_session : public relay::helper_session {
  public:
    explicit fake_session(fake_helper& helper) : helper_(helper) {}
    boost::asio::awaitable<bool> send(std::string line) override {
        if (helper_.input_closed || helper_.killed) {
            co_return false;
        }
        auto message = contracts::parse_session_message(line);
        if (message) {
            helper_.received.push_back(*message);
            if (helper_.on_message) {
                helper_.on_message(*message);
            }
        }
        co_return true;
    }
    boost::asio::awaitable<std::optional<std::string>> receive() override {
        if (auto listening = std::exchange(helper_.on_listen, nullptr)) {
            listening();
        }
        auto line = co_await helper_.to_trial_.next(std::nullopt);
        if (!line || line->end) {
            co_return std::nullopt;
        }
        co_return std::move(line->text);
    }
    // The scripted helper never follows (no test here asks it to): nothing raw follows its lines.
    boost::asio::awaitable<std::optional<std::string>> receive_bytes(std::size_t /*size*/) override {
        co_return std::nullopt;
    }
    // As a real helper does: its input closed, it settles what runs and exits, which ends the session.
    void close_input() override {
        helper_.input_closed = true;
        helper_.vanish();
    }
    void kill() override {
        helper_.killed = true;
        helper_.vanish();
    }

  private:
    fake_helper& helper_;
};

contracts::hello_message fake_backend::default_hello() {
    contracts::hello_message hello;
    hello.helper_version = "fake";
    hello.cwd = "/work";
    hello.pid = 7;
    hello.uid = 1000;
    hello.gid = 1000;
    hello.supervisor_uid = 0;
    hello.heartbeat_ms = 2000;
    return hello;
}

boost::asio::awaitable<boost::system::result<std::unique_ptr<relay::helper_session>, relay::relay_error>>
fake_backend::open_session() {
    if (says_hello) {
        helper_.say(hello);
    } else {
        // The helper never answers: once the trial waits for it, the hello wait runs out.
        helper_.on_listen = [this] { pass_time(executor_, std::chrono::minutes(3)); };
    }
    co_return std::unique_ptr<relay::helper_session>(std::make_unique<fake_session>(helper_));
}

boost::asio::awaitable<boost::system::result<relay::exec_output, relay::relay_error>>
fake_backend::run_helper_as_root(std::vector<std::string> args, std::chrono::milliseconds runs_for) {
    (void)args;
    (void)runs_for;
    co_return relay::relay_error{relay::relay_errc::environment, "the fake runs nothing as root"};
}

boost::asio::awaitable<boost::system::result<std::string, relay::relay_error>>
fake_backend::policy_namespace(std::string sidecar) {
    (void)sidecar;
    co_return relay::relay_error{relay::relay_errc::environment, "the fake has no policy sidecar"};
}

boost::asio::awaitable<void> fake_backend::destroy(std::optional<int> subject_pgid,
                                                   std::chrono::milliseconds budget) {
    (void)subject_pgid;
    calls.destroyed = budget;
    co_return;
}

boost::asio::awaitable<recovery> fake_backend::recover(std::optional<int> subject_pgid, std::string scope,
                                                       relay::recovery_window window) {
    (void)subject_pgid;
    (void)scope;
    const auto budget = window.settle_left();
    calls.recovering = budget;
    if (recovery_hangs) {
        // An engine that never answers: the whole window passes, and this call never returns on its own.
        pass_time(executor_,
                  std::chrono::duration_cast<milliseconds>(window.watch_until - relay::relay_clock::now()) +
                      milliseconds(1));
        relay::relay_timer never(executor_, std::chrono::hours(24));
        co_await never.async_wait(boost::asio::use_awaitable);
    }
    co_return recovers_as;
}

boost::asio::awaitable<std::optional<relay::outside_fault>> fake_backend::diagnose_outside() {
    const auto at = static_cast<std::size_t>(calls.diagnosed++);
    if (on_diagnose) {
        on_diagnose();
    }
    if (outside.empty()) {
        co_return std::nullopt;
    }
    co_return outside[std::min(at, outside.size() - 1)];
}

void fake_backend::mark_owned_by_subject(const std::string& why) {
    (void)why;
    calls.marked_owned = true;
}

contracts::report_message report(std::int64_t code, bool settled) {
    contracts::report_message r;
    r.exit_code = code;
    r.settled = settled;
    r.stdout_text = settled ? "" : "{\"status\":\"completed\"}";
    r.diagnostic = contracts::diagnostic::none();
    return r;
}

fake_trial run_fake_trial(const std::function<void(fake_backend&, fake_helper&)>& setup,
                          relay::trial_config config, orchestrator_script script) {
    boost::asio::io_context context;
    fake_helper helper(context.get_executor());
    fake_backend env(context.get_executor(), helper);
    setup(env, helper);
    const std::string token = "fake-token-0123456789abcdef0123456789abcdef";
    if (script.request.argv.empty()) {
        script.request.argv = {"subject"};
        script.request.result_token = "0123456789abcdef0123456789abcdef";
    }
    script.during_run_delay_ms = 0;
    relay::orchestrator_peer orchestrator(context.get_executor(), token);
    fake_trial out;
    // Every case ends in milliseconds of real time: one that does not is stuck, and says so with its log.
    boost::asio::steady_timer watchdog(context, std::chrono::seconds(20));
    watchdog.async_wait([&](boost::system::error_code ec) {
        if (!ec) {
            out.outcome = relay::trial_outcome{-2, "stuck after 20 s of real time", std::nullopt, {}, {}, {}};
            context.stop();
        }
    });
    int running = 2; // the orchestrator and the trial
    const auto ended = [&] {
        if (--running == 0) {
            watchdog.cancel();
        }
    };
    boost::asio::co_spawn(context, serve_script(orchestrator, std::move(script)),
                          [&](const std::exception_ptr&, relay::transcript t) {
                              out.seen = std::move(t);
                              ended();
                          });
    config.host = "127.0.0.1";
    config.port = orchestrator.port();
    config.token = token;
    relay::phase_log log(relay::log_format::text, false, &out.log);
    const auto begun = relay::relay_clock::now();
    boost::asio::co_spawn(context, relay::run_trial(config, env, log),
                          [&](const std::exception_ptr& error, relay::trial_outcome outcome) {
                              out.outcome = error
                                                ? relay::trial_outcome{-1, "threw", std::nullopt, {}, {}, {}}
                                                : std::move(outcome);
                              ended();
                          });
    context.run();
    out.elapsed = std::chrono::duration_cast<milliseconds>(relay::relay_clock::now() - begun);
    out.calls = env.calls;
    out.received = helper.received;
    out.session_killed = helper.killed;
    return out;
}

} // namespace maka_eval::test
