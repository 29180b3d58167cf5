// The trial's phases and every recovery branch, through the real trial code against the fake backend
// (fake_backend.hpp): in this process, on the relay clock, each in milliseconds.
#include "contracts/wire_json.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/trial/fake_backend.hpp"
#include "relay/trial/teardown_budget.hpp"

#include <csignal>
#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;
using namespace std::chrono_literals;

// As `kill -TERM` from outside would: the trial's own signal handling takes it.
void signal_self(int sig) {
    REQUIRE(::raise(sig) == 0);
}

bool said(const fake_trial& t, std::string_view text) {
    return t.log.find(text) != std::string::npos;
}

template <class Message>
bool sent(const fake_trial& t) {
    return std::any_of(t.received.begin(), t.received.end(),
                       [](const auto& m) { return std::holds_alternative<Message>(m); });
}

// The helper starts the subject when asked, then does `then`.
void on_run(fake_helper& helper, std::function<void(fake_helper&)> then) {
    helper.on_message = [&helper, then = std::move(then)](const contracts::session_message& m) {
        if (std::holds_alternative<contracts::run_request>(m)) {
            helper.say(contracts::started_message{42, 42, 1});
            then(helper);
        }
    };
}

// The helper starts the subject when asked, then the relay gets `sig` from outside; the helper answers the
// cancel that follows with `on_cancel`.
void cancelled_by(fake_helper& helper, int sig, std::function<void(fake_helper&)> on_cancel) {
    helper.on_message = [&helper, sig,
                         on_cancel = std::move(on_cancel)](const contracts::session_message& m) {
        if (std::holds_alternative<contracts::run_request>(m)) {
            helper.say(contracts::started_message{42, 42, 1});
            signal_self(sig);
        } else if (std::holds_alternative<contracts::cancel_request>(m)) {
            on_cancel(helper);
        }
    };
}

std::string termination_of(const fake_trial& t) {
    REQUIRE(t.seen.executed);
    return std::string(t.seen.executed->at("termination").as_string());
}

TEST_CASE("trial: a completed subject passes every phase in order, and the orchestrator's verify ends it") {
    const auto t = run_fake_trial(
        [](fake_backend&, fake_helper& helper) { on_run(helper, [](fake_helper& h) { h.say(report(0)); }); });
    INFO(t.log);
    CHECK(t.outcome.exit_code == relay::exit_success);
    CHECK(termination_of(t) == "exited");
    CHECK(t.seen.verify_sent);
    std::size_t at = 0;
    for (const std::string_view phase :
         {"connected", "helper", "ready", "execute", "started", "exited", "executed", "verify", "done"}) {
        const auto found = t.log.find("maka-eval-relay: " + std::string(phase) + " (", at);
        CHECK_MESSAGE(found != std::string::npos, phase);
        at = found == std::string::npos ? at : found;
    }
    CHECK_FALSE(t.calls.destroyed);
    CHECK_FALSE(t.calls.recovering);
    CHECK(t.elapsed < 5s);
}

TEST_CASE(
    "trial: the supervisor vanishes, and each recovery says what it found, destroying only when it failed") {
    struct branch {
        recovery answer;
        std::string_view says;
        bool destroys;
        bool lets_go; // the session is dropped, not awaited (frozen or unreachable)
    };
    for (const auto& b : {
             branch{recovery::settled, "stopped through a fresh cancel, the environment is intact", false,
                    false},
             branch{recovery::environment_gone, "stopped or removed from outside", false, false},
             branch{recovery::out_of_memory, "ran out of memory", false, false},
             branch{recovery::restarted, "restarted from outside", false, false},
             branch{recovery::paused, "left paused, not destroyed", false, true},
             branch{recovery::engine_unreachable, "nothing was stopped or destroyed", false, true},
             branch{recovery::failed, "could not be settled without it; the environment was destroyed", true,
                    true},
         }) {
        const auto t = run_fake_trial([&b](fake_backend& env, fake_helper& helper) {
            env.recovers_as = b.answer;
            on_run(helper, [](fake_helper& h) { h.vanish(); });
        });
        CAPTURE(b.says);
        INFO(t.log);
        CHECK(t.outcome.exit_code == relay::exit_environment);
        CHECK(t.outcome.message.starts_with("Maka Eval subject execution failed: "));
        CHECK(t.outcome.message.find(b.says) != std::string::npos);
        CHECK(t.calls.recovering);
        CHECK(t.calls.destroyed.has_value() == b.destroys);
        CHECK(t.session_killed == b.lets_go);
        CHECK_FALSE(t.seen.executed); // no `executed` for a trial whose subject's end is unknown
        CHECK(said(t, "the helper session ended without a report"));
        // Only evidence names the subject: a plain vanish is a question, never a verdict.
        if (b.answer == recovery::settled) {
            CHECK(t.outcome.message.find("killed from inside the environment?") != std::string::npos);
        }
    }
}

TEST_CASE("trial: the engine's evidence replaces the guess about a vanished supervisor") {
    const auto t = run_fake_trial([](fake_backend& env, fake_helper& helper) {
        env.outside = {
            relay::outside_fault{false, "the kernel killed 1 process(es) of container c for memory"}};
        on_run(helper, [](fake_helper& h) { h.vanish(); });
    });
    INFO(t.log);
    CHECK(t.outcome.message.find("the supervisor vanished: the kernel killed 1 process(es)") !=
          std::string::npos);
    CHECK(t.outcome.message.find("from inside") == std::string::npos);
}

TEST_CASE("trial: a recovery that never answers ends with the watch span, and the destroy gets the rest") {
    const relay::milliseconds budget(110'000);
    const auto t = run_fake_trial([](fake_backend& env, fake_helper& helper) {
        env.recovery_hangs = true;
        on_run(helper, [](fake_helper& h) { h.vanish(); });
    });
    INFO(t.log);
    CHECK(said(t, "the recovery did not finish within the watch span"));
    REQUIRE(t.calls.recovering);
    REQUIRE(t.calls.destroyed);
    const auto reserve = relay::destroy_reserve(budget);
    const auto margin = contracts::watch_margin(budget);
    CHECK(*t.calls.recovering <= budget - reserve);
    CHECK(*t.calls.destroyed <= margin);
    CHECK(*t.calls.destroyed > margin - 1s);
    // Settle span and destroy together stay within the one budget (the clock moved past the span).
    CHECK(*t.calls.recovering + *t.calls.destroyed <= budget);
    CHECK(t.outcome.message.find("the environment was destroyed") != std::string::npos);
}

TEST_CASE(
    "trial: SIGTERM settles the subject, executed says framework_timeout, and the trial lingers for verify") {
    const auto t = run_fake_trial([](fake_backend&, fake_helper& helper) {
        cancelled_by(helper, SIGTERM, [](fake_helper& h) { h.say(report(143, true)); });
    });
    INFO(t.log);
    CHECK(t.outcome.exit_code == relay::exit_cancelled);
    CHECK(termination_of(t) == "framework_timeout");
    CHECK(said(t, "settle ("));
    CHECK(said(t, "reason=framework-timeout"));
    CHECK(said(t, "settled ("));
    CHECK_FALSE(t.calls.destroyed);
    CHECK(sent<contracts::cancel_request>(t));
}

TEST_CASE("trial: SIGINT is host teardown: the subject is settled and nothing is reported") {
    const auto t = run_fake_trial([](fake_backend&, fake_helper& helper) {
        helper.on_message = [&helper](const contracts::session_message& m) {
            if (std::holds_alternative<contracts::run_request>(m)) {
                helper.say(contracts::started_message{42, 42, 1});
                signal_self(SIGINT);
            } else if (const auto* cancel = std::get_if<contracts::cancel_request>(&m)) {
                CHECK(cancel->reason == "host-teardown");
                helper.say(report(130, true));
            }
        };
    });
    INFO(t.log);
    CHECK(t.outcome.exit_code == relay::exit_host_teardown);
    CHECK_FALSE(t.seen.executed);
}

TEST_CASE("trial: a helper silent past the settle span: destroy within what is left of the budget") {
    const relay::milliseconds budget(110'000);
    const auto t = run_fake_trial([](fake_backend&, fake_helper& helper) {
        cancelled_by(helper, SIGTERM, [](fake_helper& h) {
            pass_time(h.executor(), 95s); // past the 90 s settle span, silent
        });
    });
    INFO(t.log);
    REQUIRE(t.calls.destroyed);
    CHECK(*t.calls.destroyed <= budget - 95s);
    CHECK(*t.calls.destroyed > budget - 96s);
    CHECK(t.outcome.exit_code == relay::exit_cancelled);
    CHECK(termination_of(t) == "framework_timeout");
    CHECK(contracts::to_wire(t.seen.executed->at("diagnostic")).find("result-frame-missing") !=
          std::string::npos);
}

TEST_CASE("trial: a container paused through the whole settle span is left paused, never destroyed") {
    const auto t = run_fake_trial([](fake_backend& env, fake_helper& helper) {
        env.outside = {relay::outside_fault{true, "container c is paused (docker pause)"}};
        cancelled_by(helper, SIGTERM, [](fake_helper& h) { pass_time(h.executor(), 100s); });
    });
    INFO(t.log);
    CHECK_FALSE(t.calls.destroyed);
    CHECK(t.session_killed);
    CHECK(said(t, "container c is paused (docker pause); it stayed paused for the whole teardown budget"));
    CHECK(termination_of(t) == "framework_timeout");
}

TEST_CASE("trial: the helper vanishing while settling is recovered within the same budget, then reported") {
    const relay::milliseconds budget(110'000);
    const auto t = run_fake_trial([](fake_backend&, fake_helper& helper) {
        cancelled_by(helper, SIGTERM, [](fake_helper& h) {
            pass_time(h.executor(), 30s);
            boost::asio::post(h.executor(), [&h] { h.vanish(); });
        });
    });
    INFO(t.log);
    CHECK(said(t, "the helper session ended without a report while settling"));
    REQUIRE(t.calls.recovering);
    // What the settle left of the span, not a fresh one.
    CHECK(*t.calls.recovering <= budget - relay::destroy_reserve(budget) - 30s);
    CHECK(t.outcome.exit_code == relay::exit_cancelled);
    CHECK(termination_of(t) == "framework_timeout");
}

TEST_CASE("trial: three missed heartbeats mean a silent supervisor: recovered, named as stopped or hung") {
    const auto t = run_fake_trial([](fake_backend&, fake_helper& helper) {
        on_run(helper, [](fake_helper& h) { pass_time(h.executor(), 7s); });
    });
    INFO(t.log);
    CHECK(said(t, "the supervisor stopped answering: no heartbeat for"));
    CHECK(t.outcome.message.find("stopped answering (stopped from inside the environment, or hung)") !=
          std::string::npos);
    CHECK(t.calls.recovering);
}

TEST_CASE(
    "trial: a paused environment's silence is waited for, and the subject's report still completes it") {
    const auto t = run_fake_trial([](fake_backend& env, fake_helper& helper) {
        env.outside = {relay::outside_fault{true, "container c is paused (docker pause)"}, std::nullopt};
        // Resumed once the trial asked what was wrong: then the subject's report arrives.
        env.on_diagnose = [&helper] { helper.say(report(0)); };
        on_run(helper, [](fake_helper& h) { pass_time(h.executor(), 7s); });
    });
    INFO(t.log);
    CHECK(said(t, "paused ("));
    CHECK(t.outcome.exit_code == relay::exit_success);
    CHECK_FALSE(t.calls.recovering);
    CHECK_FALSE(t.calls.destroyed);
}

TEST_CASE("trial: the orchestrator closing while the subject runs is transport loss: settled, no executed") {
    orchestrator_script script;
    script.act = misbehaviour::close_during_run;
    const auto t = run_fake_trial(
        [](fake_backend&, fake_helper& helper) {
            helper.on_message = [&helper](const contracts::session_message& m) {
                if (std::holds_alternative<contracts::run_request>(m)) {
                    helper.say(contracts::started_message{42, 42, 1});
                } else if (const auto* cancel = std::get_if<contracts::cancel_request>(&m)) {
                    CHECK(cancel->reason == "transport-lost");
                    helper.say(report(143, true));
                }
            };
        },
        {}, script);
    INFO(t.log);
    CHECK(t.outcome.exit_code == relay::exit_transport_lost);
    CHECK(t.outcome.message == "Maka Eval relay received control before execution");
}

TEST_CASE("trial: a short budget fits the graces inside it before run is sent, and says so") {
    relay::trial_config config;
    config.teardown_budget = relay::milliseconds(1000);
    const auto t = run_fake_trial(
        [](fake_backend&, fake_helper& helper) { on_run(helper, [](fake_helper& h) { h.say(report(0)); }); },
        config);
    INFO(t.log);
    CHECK(said(t, "graces ("));
    const auto run = std::find_if(t.received.begin(), t.received.end(), [](const auto& m) {
        return std::holds_alternative<contracts::run_request>(m);
    });
    REQUIRE(run != t.received.end());
    const auto& request = std::get<contracts::run_request>(*run);
    CHECK(request.term_grace_ms <= 360); // 45 % of the 800 ms settle span
    CHECK(request.kill_grace_ms <= 200);
}

TEST_CASE(
    "trial: credentials are not sent into an environment an earlier root subject owned, unless trusted") {
    orchestrator_script script;
    script.request.argv = {"subject"};
    script.request.result_token = "0123456789abcdef0123456789abcdef";
    script.request.credentials = {{"API_KEY", "canary-secret"}};
    const auto refused = run_fake_trial(
        [](fake_backend& env, fake_helper& helper) {
            env.earlier = "owned by a root subject since an earlier trial";
            on_run(helper, [](fake_helper& h) { h.say(report(0)); });
        },
        {}, script);
    CHECK(refused.outcome.exit_code == relay::exit_refused);
    CHECK(refused.outcome.message.find("this trial's credentials were not sent") != std::string::npos);
    CHECK_FALSE(sent<contracts::run_request>(refused));
    CHECK(refused.log.find("canary-secret") == std::string::npos);

    relay::trial_config trusting;
    trusting.trust_reused_container = true;
    const auto trusted = run_fake_trial(
        [](fake_backend& env, fake_helper& helper) {
            env.earlier = "owned by a root subject since an earlier trial";
            on_run(helper, [](fake_helper& h) { h.say(report(0)); });
        },
        trusting, script);
    CHECK(trusted.outcome.exit_code == relay::exit_success);
    CHECK(trusted.outcome.trusted_reuse == "owned by a root subject since an earlier trial");
    CHECK(said(trusted, "trusted ("));
}

TEST_CASE("trial: a root subject makes the environment its own before run is sent") {
    const auto t = run_fake_trial([](fake_backend& env, fake_helper& helper) {
        env.hello.uid = 0;
        on_run(helper, [](fake_helper& h) { h.say(report(0)); });
    });
    CHECK(t.calls.marked_owned);
    CHECK(said(t, "supervisor=root-subject"));
}

TEST_CASE("trial: a helper that never says hello fails the trial naming what it waited for") {
    const auto t = run_fake_trial([](fake_backend& env, fake_helper&) { env.says_hello = false; });
    INFO(t.log);
    CHECK(t.outcome.exit_code == relay::exit_environment);
    CHECK(t.outcome.message ==
          "Maka Eval could not resolve the task working directory (the helper did not answer)");
    CHECK(t.elapsed >= 120s);
}

TEST_CASE("trial: a signal before the subject starts cancels at once, and nothing is run") {
    orchestrator_script script;
    script.hold = true;
    script.on_event = [](std::string_view what) {
        if (what == "ready") {
            signal_self(SIGTERM);
        }
    };
    const auto t = run_fake_trial([](fake_backend&, fake_helper&) {}, {}, script);
    INFO(t.log);
    CHECK(t.outcome.exit_code == relay::exit_cancelled);
    CHECK(t.outcome.message == "cancelled before the subject started");
    CHECK_FALSE(sent<contracts::run_request>(t));
}

} // namespace
