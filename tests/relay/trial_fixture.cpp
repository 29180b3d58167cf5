// Test support: real-process trials (see trial_fixture.hpp).
#include "relay/trial_fixture.hpp"

#include "contracts/wire_json.hpp"

#include <chrono>
#include <csignal>
#include <thread>
#include <unistd.h>

#include <doctest/doctest.h>

namespace maka_eval::test {

namespace fs = std::filesystem;

std::vector<std::string> base_env() {
    return {"PATH=/usr/bin:/bin", "MAKA_EVAL_RELAY_TOKEN=" + relay_token, "HOME=/tmp"};
}

trial::trial(std::vector<std::string> scenario_args, std::vector<std::string> relay_args,
             std::vector<std::string> relay_env, std::vector<std::string> orchestrator_env,
             std::optional<relay_user> as)
    : orchestrator_([&] {
          scenario_args.insert(scenario_args.begin(), orchestrator_binary);
          return child_process(scenario_args, orchestrator_env);
      }()) {
    const auto port_line = orchestrator_.read_line();
    REQUIRE(port_line);
    REQUIRE(port_line->starts_with("port "));
    std::vector<std::string> argv{relay_binary,    "connect",
                                  "--host",        "127.0.0.1",
                                  "--port",        port_line->substr(5),
                                  "--work-dir",    dir_.path().string(),
                                  "--helper",      helper_binary,
                                  "--instruction", "do the task"};
    argv.insert(argv.end(), relay_args.begin(), relay_args.end());
    if (as) {
        // setpriv execs the relay: its pid stays the one the tests signal.
        REQUIRE(::chown(dir_.path().c_str(), as->uid, as->gid) == 0);
        argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid", std::to_string(as->uid), "--regid",
                                   std::to_string(as->gid), "--clear-groups", "--"});
    }
    relay_.emplace(argv, relay_env);
}

pid_t trial::wait_running(const std::function<std::string()>& read_scope) {
    for (int i = 0; i < 2000; ++i) {
        std::string text;
        if (read_scope) {
            text = read_scope();
        } else if (fs::exists(dir_.path() / "agent")) {
            for (const auto& entry : fs::directory_iterator(dir_.path() / "agent")) {
                text = read_text(entry.path().string());
            }
        }
        if (!text.empty() && text.find('\n') != std::string::npos) {
            return static_cast<pid_t>(std::stol(text));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    FAIL("the subject never started");
    return 0;
}

void trial::wait_event(const std::string& what, int timeout_ms) {
    while (true) {
        const auto line = orchestrator_.read_line(timeout_ms);
        REQUIRE(line);
        if (*line == "event " + what) {
            return;
        }
    }
}

void trial::signal(int sig) {
    ::kill(relay_->pid(), sig);
}

outcome trial::finish(int timeout_ms) {
    outcome o;
    o.exit_code = relay_->wait(timeout_ms);
    o.relay_log = relay_->stderr_text();
    auto line = orchestrator_.read_line(timeout_ms);
    while (line && line->starts_with("event ")) {
        line = orchestrator_.read_line(timeout_ms);
    }
    INFO("relay log:\n" << o.relay_log);
    REQUIRE(line);
    o.transcript = contracts::parse_object(*line, 1 << 24).value();
    return o;
}

std::vector<std::string> subject(std::vector<std::string> scenario, const std::string& script,
                                 const std::string& helper) {
    scenario.insert(scenario.end(), {"-e", "HELPER=" + helper, "--", "sh", "-c", script});
    return scenario;
}

const boost::json::object& executed_of(const outcome& o) {
    INFO("relay log:\n" << o.relay_log << "\ntranscript: " << contracts::to_wire(o.transcript));
    REQUIRE(o.transcript.at("executed").is_object());
    return o.transcript.at("executed").as_object();
}

} // namespace maka_eval::test
