// maka-eval-relay `connect` on the local backend against the scriptable loopback orchestrator, both as real
// processes over real TCP: the original's observable behaviour on every path of BEHAVIOUR.md §0–§2.
#include "contracts/digest.hpp"
#include "contracts/wire_json.hpp"
#include "in_container/fixture.hpp"
#include "relay/exit_codes.hpp"
#include "relay/trial_fixture.hpp"
#include "support/child_process.hpp"
#include "support/process.hpp"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;
namespace fs = std::filesystem;
using test::relay_token;

bool gone_soon(pid_t pgid) {
    for (int i = 0; i < 300 && ::kill(-pgid, 0) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return ::kill(-pgid, 0) != 0;
}

TEST_CASE("happy path: ready, execute, the frame passed through in executed, verify") {
    trial t(subject({}, "echo noise; \"$HELPER\" frame '{\"status\":\"completed\"}'; exit 0"));
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    const auto& ready = o.transcript.at("ready").as_object();
    CHECK(ready.at("instruction").as_string() == "do the task");
    CHECK(ready.at("cwd").as_string().starts_with("/"));
    const auto& executed = executed_of(o);
    CHECK(executed.at("termination").as_string() == "exited");
    CHECK(executed.at("exitCode").as_int64() == 0);
    CHECK(executed.at("stdout").as_string() == "{\"status\":\"completed\"}");
    CHECK(executed.at("diagnostic").as_object().at("category").as_string() == "unstructured-output");
    CHECK(o.transcript.at("verifySent").as_bool());
    CHECK(read_text((t.dir() / "artifacts" / "maka-subject.stdout.txt").string()).starts_with("noise\n"));
}

TEST_CASE("--log-format json: one JSON object per phase on stderr, with its duration") {
    trial t(subject({}, "exit 0"), {"--log-format", "json"});
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    int phases = 0;
    std::string_view rest = o.relay_log;
    while (!rest.empty()) {
        const auto end = rest.find('\n');
        const auto line = rest.substr(0, end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        const auto object = contracts::parse_object(line, 1 << 16);
        REQUIRE(object.has_value());
        CHECK(object->at("ms").is_int64());
        phases += object->at("level").as_string() == "info" ? 1 : 0;
    }
    CHECK(phases >= 7); // connected, helper, ready, execute, started, exited, executed, verify
}

TEST_CASE("exit codes and captureStdout:false reach the orchestrator as the original reports them") {
    trial t(subject({"--no-capture"}, "\"$HELPER\" frame '{}'; exit 7"));
    const auto o = t.finish();
    const auto& executed = executed_of(o);
    CHECK(executed.at("exitCode").as_int64() == 7);
    CHECK(contracts::to_wire(executed.at("diagnostic")) == "{\"category\":\"none\"}");
}

TEST_CASE("environment and credentials reach the subject; no secret is on any command line") {
    const std::string canary = "canary-" + std::to_string(::getpid());
    // Only the orchestrator double has the value (in its environment): the relay's environment does not.
    trial t(
        subject({"-e", "MODE=offline", "--credential", "API_KEY"},
                "test \"$MODE\" = offline && test \"$(printf %s \"$API_KEY\" | sha256sum | cut -c1-64)\" = " +
                    contracts::sha256_hex(canary) +
                    " && test -n \"$MAKA_EVAL_RESULT_TOKEN\" && test -z \"$MAKA_EVAL_RELAY_TOKEN\" && sleep "
                    "0.5 && "
                    "\"$HELPER\" frame ok"),
        {}, base_env(), [&] {
            auto env = base_env();
            env.push_back("API_KEY=" + canary);
            return env;
        }());
    t.wait_running();
    for (const auto& entry : fs::directory_iterator("/proc")) {
        CHECK(read_text((entry.path() / "cmdline").string()).find(canary) == std::string::npos);
    }
    const auto o = t.finish();
    CHECK(executed_of(o).at("exitCode").as_int64() == 0);
    CHECK(executed_of(o).at("stdout").as_string() == "ok");
    CHECK(o.relay_log.find(canary) == std::string::npos);
    CHECK(o.relay_log.find(relay_token) == std::string::npos);
}

TEST_CASE("every execute refusal: the relay reports it, exits non-zero, and the subject never runs") {
    struct refusal {
        std::string raw;
        std::string text;
    };
    const std::string rt(32, '0');
    const std::string marker = (fs::temp_directory_path() / ("never-" + std::to_string(::getpid()))).string();
    const std::string cmd = R"("command":"/bin/touch","args":[")" + marker + "\"]";
    const std::vector<refusal> cases = {
        {"{" + cmd + R"(,"resultToken":")" + rt + "\"}", "invalid Maka Eval credentials"},
        {"{" + cmd + R"(,"credentials":{},"environment":null,"resultToken":")" + rt + "\"}",
         "invalid Maka Eval environment"},
        {"{" + cmd + R"(,"credentials":{"A":"1"},"environment":{"A":"2"},"resultToken":")" + rt + "\"}",
         "Maka Eval environment overlaps credentials"},
        {"{" + cmd + R"(,"credentials":{},"captureStdout":"yes","resultToken":")" + rt + "\"}",
         "invalid Maka Eval stdout policy"},
        {"{" + cmd + R"(,"credentials":{},"resultToken":"XYZ"})", "invalid Maka Eval result token"},
        {"{" + cmd + R"(,"credentials":{"MAKA_EVAL_RESULT_TOKEN":"x"},"resultToken":")" + rt + "\"}",
         "Maka Eval environment contains a reserved name"},
        {"{" + cmd + R"(,"credentials":{},"environment":{"BAD-NAME":"x"},"resultToken":")" + rt + "\"}",
         "invalid Maka Eval environment name"},
        {"{" + cmd + R"(,"credentials":{"BAD-NAME":"x"},"resultToken":")" + rt + "\"}",
         "invalid Maka Eval credential name"},
        {R"({"command":"/bin/touch","args":"x","credentials":{},"resultToken":")" + rt + "\"}",
         "invalid Maka Eval command"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.text);
        trial t({"--raw-execute", c.raw, "--", "unused"});
        const auto o = t.finish();
        CHECK(o.exit_code == relay::exit_refused);
        CHECK(o.relay_log.find(c.text) != std::string::npos);
        CHECK(o.transcript.at("executed").is_null());
        CHECK_FALSE(fs::exists(marker));
    }
}

TEST_CASE("a wrong token or kind is refused as the original refuses it") {
    for (const std::string scenario : {"wrong-token", "wrong-kind"}) {
        trial t(subject({"--scenario", scenario}, "exit 0"));
        const auto o = t.finish();
        CHECK(o.exit_code == relay::exit_refused);
        CHECK(o.relay_log.find("invalid Maka Eval relay message") != std::string::npos);
    }
}

TEST_CASE("garbage and oversized lines are transport loss, with a clear message") {
    trial garbage(subject({"--scenario", "garbage"}, "exit 0"));
    auto o = garbage.finish();
    CHECK(o.exit_code == relay::exit_transport_lost);
    CHECK(o.relay_log.find("message line is not JSON") != std::string::npos);
    trial huge(subject({"--scenario", "huge-line"}, "exit 0"));
    o = huge.finish();
    CHECK(o.exit_code == relay::exit_transport_lost);
    CHECK(o.relay_log.find("exceeds 1048576 bytes") != std::string::npos);
}

TEST_CASE("the orchestrator closing before or after ready ends the trial without a subject") {
    for (const std::string scenario : {"close-after-accept", "close-after-ready"}) {
        trial t(subject({"--scenario", scenario}, "exit 0"));
        CHECK(t.finish().exit_code == relay::exit_transport_lost);
    }
}

TEST_CASE("the orchestrator closing or speaking during the run settles the subject and sends no executed") {
    for (const std::string scenario : {"close-during-run", "control-during-run"}) {
        CAPTURE(scenario);
        trial t(subject({"--scenario", scenario, "--delay-ms", "300"}, "sleep 60"));
        const pid_t pgid = t.wait_running();
        const auto o = t.finish();
        CHECK(o.exit_code == relay::exit_transport_lost);
        CHECK(o.transcript.at("executed").is_null());
        CHECK(gone_soon(pgid));
    }
}

TEST_CASE("the orchestrator closing after executed: transport loss, what the subject left is left alone") {
    trial t(subject({"--scenario", "close-after-executed"}, "\"$HELPER\" frame '{}'"));
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_transport_lost);
    CHECK(executed_of(o).at("termination").as_string() == "exited");
}

TEST_CASE("a bad decision after executed is refused") {
    trial t(subject({"--scenario", "bad-decision"}, "exit 0"));
    CHECK(t.finish().exit_code == relay::exit_refused);
}

TEST_CASE("SIGTERM before the subject starts: nothing is sent") {
    trial t(subject({"--hold"}, "exit 0"));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_cancelled);
    CHECK(o.transcript.at("executed").is_null());
}

TEST_CASE(
    "SIGTERM while the subject runs: framework_timeout/124, a frame printed while stopping passes through") {
    trial t(subject(
        {}, "trap '\"$HELPER\" frame \"{\\\"partial\\\":1}\"; exit 0' TERM; while :; do sleep 0.05; done"));
    const pid_t pgid = t.wait_running();
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_cancelled);
    const auto& executed = executed_of(o);
    CHECK(executed.at("termination").as_string() == "framework_timeout");
    CHECK(executed.at("exitCode").as_int64() == 124);
    CHECK(executed.at("stdout").as_string() == "{\"partial\":1}");
    CHECK(gone_soon(pgid));
}

TEST_CASE("SIGTERM with a TERM-ignoring subject inside a short budget: destroy, then framework_timeout") {
    // The subject says when its trap is in place: a SIGTERM before that would simply end it, and the relay
    // would have nothing to destroy.
    const auto trapped = fs::temp_directory_path() / ("trapped-" + std::to_string(::getpid()));
    fs::remove(trapped);
    trial t(subject({}, "trap '' TERM; : > " + trapped.string() + "; sleep 60"),
            {"--teardown-timeout-ms", "1000"});
    const pid_t pgid = t.wait_running();
    for (int i = 0; i < 500 && !fs::exists(trapped); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(fs::exists(trapped));
    fs::remove(trapped);
    const auto begun = std::chrono::steady_clock::now();
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(std::chrono::steady_clock::now() - begun < std::chrono::milliseconds(3000));
    CHECK(o.exit_code == relay::exit_cancelled);
    const auto& executed = executed_of(o);
    CHECK(executed.at("termination").as_string() == "framework_timeout");
    CHECK(executed.at("exitCode").as_int64() == 124);
    CHECK(contracts::to_wire(executed.at("diagnostic")) ==
          "{\"category\":\"result-frame-missing\",\"bytes\":0,\"sha256\":\"" + contracts::sha256_hex("") +
              "\"}");
    CHECK(o.relay_log.find("destroy") != std::string::npos);
    CHECK(o.relay_log.find("overflow") == std::string::npos); // no event lost after the timed-out settle
    CHECK(gone_soon(pgid));
}

TEST_CASE("SIGINT (host teardown) while the subject runs: settled, no executed") {
    trial t(subject({}, "sleep 60"));
    const pid_t pgid = t.wait_running();
    t.signal(SIGINT);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_host_teardown);
    CHECK(o.transcript.at("executed").is_null());
    CHECK(gone_soon(pgid));
}

TEST_CASE("a subject that already exited is never signalled, even on SIGTERM after executed") {
    const std::string marker =
        (fs::temp_directory_path() / ("signalled-" + std::to_string(::getpid()))).string();
    fs::remove(marker);
    trial t(subject({"--verify-delay-ms", "1500"},
                    "(trap 'touch " + marker + "' TERM; sleep 5) >/dev/null 2>&1 & echo $! > " +
                        (fs::temp_directory_path() / ("bg-" + std::to_string(::getpid()))).string() +
                        "; \"$HELPER\" frame '{}'"));
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_cancelled);
    CHECK(executed_of(o).at("termination").as_string() == "exited");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK_FALSE(fs::exists(marker));
    const auto bg = read_text((fs::temp_directory_path() / ("bg-" + std::to_string(::getpid()))).string());
    REQUIRE_FALSE(bg.empty());
    const pid_t pid = static_cast<pid_t>(std::stol(bg));
    CHECK(::kill(pid, 0) == 0); // still running, untouched
    ::kill(pid, SIGKILL);
    fs::remove(fs::temp_directory_path() / ("bg-" + std::to_string(::getpid())));
}

TEST_CASE("an invalid teardown timeout is refused before connecting, with the original's text") {
    for (const std::string bad : {"0", "-5", "1.5", "abc", ""}) {
        const auto r = run_process(
            {relay_binary, "connect", "--host", "127.0.0.1", "--port", "9", "--teardown-timeout-ms", bad}, "",
            base_env());
        CHECK(r.exit_code == relay::exit_usage);
        CHECK(r.err.find("Maka Eval teardown timeout is invalid") != std::string::npos);
    }
}

TEST_CASE("the relay token is never taken from argv; a token file must be private") {
    auto r = run_process({relay_binary, "connect", "--host", "127.0.0.1", "--port", "9", "--token", "x"}, "",
                         std::vector<std::string>{"PATH=/usr/bin:/bin"});
    CHECK(r.exit_code == relay::exit_usage);
    CHECK(r.err.find("never taken from the command line") != std::string::npos);
    scratch dir;
    const auto file = (dir.path() / "token").string();
    std::ofstream(file) << "secret\n";
    fs::permissions(file, fs::perms::owner_read | fs::perms::group_read);
    r = run_process({relay_binary, "connect", "--host", "127.0.0.1", "--port", "9", "--token-file", file}, "",
                    std::vector<std::string>{"PATH=/usr/bin:/bin"});
    CHECK(r.exit_code == relay::exit_usage);
    CHECK(r.err.find("mode 0600") != std::string::npos);
}

TEST_CASE("--env bridge needs the adapter's socket, and says so") {
    auto r = run_process({relay_binary, "connect", "--host", "127.0.0.1", "--port", "9", "--env", "bridge"},
                         "", base_env());
    CHECK(r.exit_code == relay::exit_usage);
    CHECK(r.err.find("--env bridge and --bridge-fd go together") != std::string::npos);
    r = run_process({relay_binary, "connect", "--host", "127.0.0.1", "--port", "9", "--bridge-fd", "1"}, "",
                    base_env());
    CHECK(r.exit_code == relay::exit_usage);
    CHECK(r.err.find("--bridge-fd takes") != std::string::npos);
    // An fd number that is not an inherited socket (none is open at 200 here).
    r = run_process({relay_binary, "connect", "--host", "127.0.0.1", "--port", "9", "--env", "bridge",
                     "--bridge-fd", "200", "--helper", helper_binary},
                    "", base_env());
    CHECK(r.exit_code == relay::exit_environment);
    CHECK(r.err.find("is not an open socket") != std::string::npos);
}

TEST_CASE("run: the debugging command, one JSON object with the messages as sent") {
    const auto r = run_process({relay_binary, "run", "--json", "--helper", helper_binary, "-e",
                                "HELPER=" + helper_binary, "--", "sh", "-c", "\"$HELPER\" frame '{\"v\":1}'"},
                               "", base_env());
    CHECK(r.exit_code == 0);
    const auto out = contracts::parse_object(r.out, 1 << 20).value();
    CHECK(out.at("exit").as_int64() == 0);
    CHECK(out.at("executed").as_object().at("stdout").as_string() == "{\"v\":1}");
    CHECK(out.at("ready").as_object().at("kind").as_string() == "ready");
}

} // namespace
