// maka-eval-relay `connect` on the local backend against the scriptable loopback orchestrator, both as real
// processes over real TCP: the original's observable behaviour on every path of the protocol
// (docs/protocol.md).
#include "contracts/digest.hpp"
#include "contracts/wire_json.hpp"
#include "in_container/fixture.hpp"
#include "relay/support/exit_codes.hpp"
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

// Zombies count as gone: `kill(-pgid, 0)` succeeds on a zombie, so a machine whose PID 1 never reaps would
// make a process that was killed look alive, and one that should be gone look as if it merely lingered.
bool gone_soon(pid_t pgid) {
    return eventually([pgid] { return !group_alive(pgid); });
}

// A file the subject writes once it is ready to be signalled (its traps are set).
struct marker {
    fs::path path = fs::temp_directory_path() /
                    ("marker-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    marker() { fs::remove(path); }
    ~marker() { fs::remove(path); }
    marker(const marker&) = delete;
    marker& operator=(const marker&) = delete;
    [[nodiscard]] bool appears() const {
        return eventually([this] { return fs::exists(path); }, 10000);
    }
    [[nodiscard]] std::string touch() const { return ": > " + path.string(); }
    static inline int counter = 0;
};

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
        if (object->at("phase").as_string() == "started") {
            CHECK(object->at("pid").is_int64()); // numbers are numbers
        }
        if (object->at("phase").as_string() == "helper") {
            CHECK(object->at("cwd").is_string());
        }
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

TEST_CASE("environment and credentials reach the subject, no secret is on any command line") {
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

TEST_CASE("an execute line past the original's 64 KiB and under 1 MiB arrives whole") {
    // The original's reader stopped at 64 KiB; ours takes up to 1 MiB (contracts/limits.hpp), so an
    // environment of 400 KiB reaches the subject. (Four values: one argv string is capped at 128 KiB.)
    std::vector<std::string> args;
    for (const char name : {'A', 'B', 'C', 'D'}) {
        args.insert(args.end(), {"-e", std::string("BIG_") + name + "=" + std::string(100 * 1024, name)});
    }
    trial t(subject(args, "\"$HELPER\" frame \"$(printf '%s' \"$BIG_A$BIG_B$BIG_C$BIG_D\" | wc -c)\""));
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == std::to_string(4 * 100 * 1024));
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
    t.wait_event("ready");
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_cancelled);
    CHECK(o.transcript.at("executed").is_null());
}

// SIGHUP (a closed terminal, a supervisor's hang-up) is the same cancellation as SIGTERM.
TEST_CASE("SIGTERM or SIGHUP while the subject runs is framework_timeout/124 with the frame printed while "
          "stopping passed through and the signal logged") {
    for (const auto& cancel : {std::pair{SIGTERM, "SIGTERM"}, std::pair{SIGHUP, "SIGHUP"}}) {
        const int sig = cancel.first;
        const std::string name = cancel.second;
        CAPTURE(name);
        const marker trapped;
        trial t(subject({}, "trap '\"$HELPER\" frame \"{\\\"partial\\\":1}\"; exit 0' TERM; " +
                                trapped.touch() + "; while :; do sleep 0.05; done"));
        const pid_t pgid = t.wait_running();
        REQUIRE(trapped.appears()); // a signal before the trap would end it without a frame
        t.signal(sig);
        const auto o = t.finish();
        CHECK(o.exit_code == relay::exit_cancelled);
        const auto& executed = executed_of(o);
        CHECK(executed.at("termination").as_string() == "framework_timeout");
        CHECK(executed.at("exitCode").as_int64() == 124);
        CHECK(executed.at("stdout").as_string() == "{\"partial\":1}");
        CHECK(o.relay_log.find("signal=" + name + " means=cancellation") != std::string::npos);
        CHECK(gone_soon(pgid));
    }
}

// SIGTERM to the relay (the framework's timeout), then the trial's end: within `limit`, as a framework
// timeout.
auto framework_timeout_within(trial& t, std::chrono::milliseconds limit) {
    const auto begun = std::chrono::steady_clock::now();
    t.signal(SIGTERM);
    auto o = t.finish();
    CHECK(std::chrono::steady_clock::now() - begun < limit);
    CHECK(o.exit_code == relay::exit_cancelled);
    CHECK(executed_of(o).at("termination").as_string() == "framework_timeout");
    return o;
}

TEST_CASE(
    "SIGTERM with a TERM-ignoring subject inside a 1 s budget: the graces fit, settled without destroy") {
    // The subject says when its trap is in place: a SIGTERM before that would simply end it.
    const marker trapped;
    trial t(subject({}, "trap '' TERM; " + trapped.touch() + "; sleep 60"),
            {"--teardown-timeout-ms", "1000"});
    const pid_t pgid = t.wait_running();
    REQUIRE(trapped.appears());
    const auto o = framework_timeout_within(t, std::chrono::milliseconds(1500));
    CHECK(executed_of(o).at("exitCode").as_int64() == 124);
    INFO(o.relay_log);
    // The default 20 s TERM and 10 s KILL graces, fitted inside the 800 ms settle span and said so.
    CHECK(o.relay_log.find("graces (") != std::string::npos);
    CHECK(o.relay_log.find("termGraceMs=360 killGraceMs=200") != std::string::npos);
    CHECK(o.relay_log.find("settled (") != std::string::npos);
    CHECK(o.relay_log.find("destroy") == std::string::npos);
    CHECK(gone_soon(pgid));
}

TEST_CASE("a supervisor that cannot answer inside the budget: destroy, then framework_timeout, within it") {
    // The subject writes its supervisor's pid; the test stops the supervisor, so no settle can finish.
    const marker supervisor;
    trial t(subject({}, "echo $PPID > " + supervisor.path.string() + "; sleep 60"),
            {"--teardown-timeout-ms", "1000"});
    const pid_t pgid = t.wait_running();
    REQUIRE(supervisor.appears());
    REQUIRE(eventually([&] { return !read_text(supervisor.path.string()).empty(); }, 5000));
    const pid_t helper = std::stoi(read_text(supervisor.path.string()));
    REQUIRE(::kill(helper, SIGSTOP) == 0);
    // What was stopped is the supervisor, and it is stopped (the signal takes effect asynchronously).
    const std::string proc = "/proc/" + std::to_string(helper);
    CHECK(read_text(proc + "/cmdline").find("session") != std::string::npos);
    REQUIRE(eventually([&] { return read_text(proc + "/stat").find(") T ") != std::string::npos; }));
    const auto o = framework_timeout_within(t, std::chrono::milliseconds(1500));
    CHECK(contracts::to_wire(executed_of(o).at("diagnostic")) ==
          "{\"category\":\"result-frame-missing\",\"bytes\":0,\"sha256\":\"" + contracts::sha256_hex("") +
              "\"}");
    INFO(o.relay_log);
    CHECK(o.relay_log.find("destroy") != std::string::npos);
    CHECK(o.relay_log.find("overflow") == std::string::npos); // no event lost after the timed-out settle
    CHECK(gone_soon(pgid));
}

TEST_CASE(
    "Ctrl-C: the relay says what it is doing, and a second SIGINT KILLs at once instead of the TERM grace") {
    const marker trapped;
    const marker termed;
    // Survives TERM (its trap only notes it) for the whole default 20 s grace.
    trial t(subject({}, "trap '" + termed.touch() + "' TERM; " + trapped.touch() +
                            "; while :; do sleep 0.05; done"));
    const pid_t pgid = t.wait_running();
    REQUIRE(trapped.appears());
    const auto begun = std::chrono::steady_clock::now();
    t.signal(SIGINT);
    REQUIRE(termed.appears()); // the TERM went out: the settle is under way
    t.signal(SIGINT);
    const auto o = t.finish();
    CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(10));
    CHECK(o.exit_code == relay::exit_host_teardown);
    INFO(o.relay_log);
    CHECK(o.relay_log.find("Ctrl-C (SIGINT) again to KILL now") != std::string::npos);
    CHECK(o.relay_log.find("kill-now (") != std::string::npos);
    CHECK(o.relay_log.find("signalled") != std::string::npos);
    CHECK(o.relay_log.find("destroy") == std::string::npos);
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
    const marker signalled;
    const marker background;
    // `verify` is held back (for at most 60 s: the orchestrator stops waiting when the relay leaves), so the
    // SIGTERM surely comes between `executed` and `verify`.
    trial t(subject({"--verify-delay-ms", "60000"},
                    "(trap '" + signalled.touch() + "' TERM; sleep 30) & echo $! > " +
                        background.path.string() + "; \"$HELPER\" frame '{}'"));
    t.wait_event("executed");
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_cancelled);
    CHECK(executed_of(o).at("termination").as_string() == "exited");
    const auto bg = read_text(background.path.string());
    REQUIRE_FALSE(bg.empty());
    const pid_t pid = static_cast<pid_t>(std::stol(bg));
    // Still running, untouched: a zombie would mean it was killed (or ended), whoever reaps it.
    CHECK(process_alive(pid));
    CHECK_FALSE(fs::exists(signalled.path));
    ::kill(pid, SIGKILL);
}

TEST_CASE("what a subject leaves running survives the trial, and the relay does not wait for it") {
    const marker background;
    const auto begun = std::chrono::steady_clock::now();
    trial t(subject({}, "sleep 30 & echo $! > " + background.path.string() + "; exit 0"));
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    // The background sleep holds the subject's stdout: the trial ends after the drain, not after it.
    CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(15));
    const pid_t pid = static_cast<pid_t>(std::stol(read_text(background.path.string())));
    CHECK(process_alive(pid));
    ::kill(pid, SIGKILL);
}

TEST_CASE("the subject inherits no descriptor of the relay or the helper: only stdin, stdout, stderr") {
    trial t(subject({}, "ls /proc/$$/fd; \"$HELPER\" frame '{}'"));
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(read_text((t.dir() / "artifacts" / "maka-subject.stdout.txt").string())
              .starts_with("0\n1\n2\nMAKA-EVAL-RESULT-V1 "));
}

TEST_CASE("--artifact-limit: the file is cut, the report still counts and hashes every byte") {
    trial t(subject({}, "head -c 300000 /dev/zero; head -c 5000 /dev/zero >&2; exit 0"),
            {"--artifact-limit", "1000"});
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_success);
    CHECK(fs::file_size(t.dir() / "artifacts" / "maka-subject.stdout.txt") == 1000);
    CHECK(fs::file_size(t.dir() / "artifacts" / "maka-subject.stderr.txt") == 1000);
    CHECK(o.relay_log.find("maka-subject.stdout.txt was cut at the artifact limit: 1000 of 300000 bytes") !=
          std::string::npos);
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

TEST_CASE("the relay token is never taken from argv, a token file must be private") {
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
    // A file past 64 KiB is refused, never cut silently to a token that then fails the handshake.
    std::ofstream(file, std::ios::trunc) << std::string(70000, 't') << "\n";
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
    r = run_process({relay_binary, "connect", "--host", "127.0.0.1", "--port", "9", "--token-file", file}, "",
                    std::vector<std::string>{"PATH=/usr/bin:/bin"});
    CHECK(r.exit_code == relay::exit_usage);
    CHECK(r.err.find("longer than 64 KiB") != std::string::npos);
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

TEST_CASE("--task-env-fd: the task's environment reaches the subject, under what execute sets") {
    const auto dir = fs::temp_directory_path() / ("task-env-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto file = (dir / "env.json").string();
    auto with_task_env = [&](const std::string& json, const std::string& script) {
        std::ofstream(file) << json;
        // The descriptor as the adapter passes it: inherited, never a value on a command line.
        return run_process({"/bin/sh", "-c",
                            "exec \"$0\" run --json --helper \"$1\" --task-env-fd 3 -e MODE=offline -e "
                            "HELPER=\"$1\" -- sh -c \"$2\" 3<\"$3\"",
                            relay_binary, helper_binary, script, file},
                           "", base_env());
    };
    auto r = with_task_env(R"({"TASK_MODE":"graded","MODE":"from-task","HELPER":"not-this"})",
                           "\"$HELPER\" frame \"$TASK_MODE/$MODE\"");
    CHECK(r.exit_code == 0);
    const auto out = contracts::parse_object(r.out, 1 << 20).value();
    CHECK(out.at("executed").as_object().at("stdout").as_string() == "graded/offline");
    r = with_task_env("[1]", "true");
    CHECK(r.exit_code == relay::exit_usage);
    CHECK(r.err.find("--task-env-fd 3: not a JSON object") != std::string::npos);
    r = with_task_env(R"({"1BAD":"secret-value"})", "true");
    CHECK(r.exit_code == relay::exit_usage);
    CHECK(r.err.find("1BAD is not NAME") != std::string::npos);
    CHECK(r.err.find("secret-value") == std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE(
    "run and connect: each its own --help (exit 0), and usage errors that say what to do, before any trial") {
    const auto run_help = run_process({relay_binary, "run", "--help"}, "", base_env());
    CHECK(run_help.exit_code == 0);
    CHECK(run_help.out.find("maka-eval-relay run [OPTIONS]") != std::string::npos);
    CHECK(run_help.out.find("maka-eval-relay connect") == std::string::npos);
    CHECK(run_help.out.find("--teardown-timeout-ms") != std::string::npos);
    const auto connect_help = run_process({relay_binary, "connect", "-h"}, "", base_env());
    CHECK(connect_help.exit_code == 0);
    CHECK(connect_help.out.find("maka-eval-relay connect --host") != std::string::npos);
    CHECK(connect_help.out.find("maka-eval-relay run") == std::string::npos);
    auto env = base_env();
    env.emplace_back("X=from-env");
    auto usage_error = [&](std::vector<std::string> args, const std::string& says) {
        args.insert(args.begin(), {relay_binary, "run", "--helper", helper_binary});
        const auto r = run_process(args, "", env);
        CAPTURE(says);
        CHECK(r.exit_code == relay::exit_usage);
        CHECK(r.err.find(says) != std::string::npos);
        CHECK(r.out.empty()); // no trial
        return r;
    };
    usage_error({"sh", "-c", "true"}, "the command goes after --: maka-eval-relay run [OPTIONS] -- sh");
    usage_error({"--work-dir", "--", "true"}, "--work-dir needs a value");
    const auto bad_e =
        usage_error({"-e", "BAD NAME=hunter2", "--", "true"}, "-e BAD NAME=…: -e takes NAME=VALUE");
    CHECK(bad_e.err.find("hunter2") == std::string::npos); // a value is never echoed
    usage_error({"-e", "MAKA_EVAL_RESULT_TOKEN=x", "--", "true"}, "MAKA_EVAL_RESULT_TOKEN is reserved");
    usage_error({"-e", "X=1", "--credential", "X", "--", "true"},
                "X is given both with -e and with --credential");
    std::vector<std::string> big;
    for (int i = 0; i < 10; ++i) {
        big.insert(big.end(), {"-e", "BIG" + std::to_string(i) + "=" + std::string(120 * 1024, 'v')});
    }
    big.insert(big.end(), {"--", "true"});
    usage_error(big, "do not fit the orchestrator's control line");
    const auto missing =
        run_process({relay_binary, "run", "--helper", "/nonexistent", "--", "true"}, "", env);
    CHECK(missing.err.find("--helper /nonexistent: no such file") != std::string::npos);
    const auto nested = run_process(
        {relay_binary, "run", "--helper", helper_binary, "--work-dir", "/nonexistent/dir", "--", "true"}, "",
        env);
    CHECK(nested.exit_code != 0);
    CHECK(nested.err.find("--work-dir /nonexistent/dir: No such file or directory") != std::string::npos);
    CHECK_FALSE(fs::exists("/nonexistent"));
}

TEST_CASE("run: why a subject failed is in the summary, and --exit-with-subject exits with its code") {
    const auto r =
        run_process({relay_binary, "run", "--helper", helper_binary, "--", "/nonexistent"}, "", base_env());
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("executed    exited, exit code 127\n") != std::string::npos);
    CHECK(r.out.find("stderr      maka-eval-helper: cannot execute /nonexistent: not found\n") !=
          std::string::npos);
    CHECK(r.out.find("frame       \"\" (the decoded result frame") != std::string::npos);
    const auto own = run_process({relay_binary, "run", "--exit-with-subject", "--helper", helper_binary, "--",
                                  "sh", "-c", "echo why >&2; exit 7"},
                                 "", base_env());
    CHECK(own.exit_code == 7);
    CHECK(own.out.find("stderr      why\n") != std::string::npos);
    CHECK(own.out.find("relay exit  7 (the subject's exit code)") != std::string::npos);
    const auto fine =
        run_process({relay_binary, "run", "--exit-with-subject", "--helper", helper_binary, "--", "true"}, "",
                    base_env());
    CHECK(fine.exit_code == 0);
    CHECK(fine.out.find("stderr ") == std::string::npos);
}

TEST_CASE("run --rm leaves no work directory behind, and is refused with a --work-dir of the user's") {
    const auto r = run_process(
        {relay_binary, "run", "--rm", "--json", "--helper", helper_binary, "--", "true"}, "", base_env());
    CHECK(r.exit_code == 0);
    const auto object = contracts::parse_object(r.out, 1 << 20).value();
    CHECK(object.at("artifacts").as_string() == "(removed: --rm)");
    const auto kept =
        run_process({relay_binary, "run", "--json", "--helper", helper_binary, "--", "true"}, "", base_env());
    const auto dir =
        fs::path(std::string(contracts::parse_object(kept.out, 1 << 20).value().at("artifacts").as_string()))
            .parent_path();
    CHECK(fs::exists(dir));
    fs::remove_all(dir);
    const auto refused =
        run_process({relay_binary, "run", "--rm", "--work-dir", "/tmp", "--", "true"}, "", base_env());
    CHECK(refused.exit_code == relay::exit_usage);
    CHECK(refused.err.find("--rm removes the work directory") != std::string::npos);
}

TEST_CASE("run --json --follow: stdout is the JSON object alone, the followed output on stderr, and a "
          "failure says why") {
    const auto r = run_process({relay_binary, "run", "--json", "--follow", "--helper", helper_binary, "--",
                                "sh", "-c", "echo printed-by-subject; exit 3"},
                               "", base_env());
    CHECK(r.exit_code == 0);
    const auto object = contracts::parse_object(r.out, 1 << 20);
    REQUIRE(object); // the whole of stdout is one object
    CHECK(object->at("executed").as_object().at("exitCode").as_int64() == 3);
    CHECK(r.err.find("printed-by-subject\n") != std::string::npos);
    const auto failed = run_process({relay_binary, "run", "--json", "--env", "docker:maka-no-such",
                                     "--docker-host", "unix:///nonexistent.sock", "--", "true"},
                                    "", base_env());
    CHECK(failed.exit_code == relay::exit_environment);
    const auto failed_object = contracts::parse_object(failed.out, 1 << 20);
    REQUIRE(failed_object);
    CHECK(failed_object->at("error").as_string().starts_with("cannot reach the Docker engine"));
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

TEST_CASE(
    "run reports what the subject consumed: CPU, peak memory, processes, wall, and the wire is unchanged") {
    const auto dir = fs::temp_directory_path() / ("usage-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    // 64 MiB touched, at least 300 ms of CPU, ten more processes.
    const std::string subject = "import subprocess, time\n"
                                "b = bytearray(64 << 20)\n"
                                "for i in range(0, len(b), 4096): b[i] = 1\n"
                                "t = time.process_time()\n"
                                "while time.process_time() - t < 0.3: pass\n"
                                "for i in range(10): subprocess.run(['/bin/true'])\n";
    const auto r = run_process({relay_binary, "run", "--json", "--helper", helper_binary, "--work-dir",
                                dir.string(), "--", "python3", "-c", subject},
                               "", base_env(), 60000);
    REQUIRE(r.exit_code == 0);
    const auto out = contracts::parse_object(r.out, 1 << 20).value();
    const auto& usage = out.at("usage").as_object();
    CHECK(usage.at("userMs").to_number<std::uint64_t>() + usage.at("systemMs").to_number<std::uint64_t>() >=
          280);
    CHECK(usage.at("peakRssKiB").to_number<std::uint64_t>() >= 64U * 1024);
    // python and ten more, from the kernel's fork events; where the helper may not listen to them (no
    // CAP_NET_ADMIN in the host's network namespace: a container), a census that says so, a lower bound.
    const auto processes = usage.at("processes").to_number<std::uint64_t>();
    if (usage.contains("processesLowerBound")) {
        CHECK(usage.at("processesLowerBound").as_bool());
        CHECK(r.err.find("counted by a census") != std::string::npos); // said in the relay's log
        CHECK(processes >= 1);
        CHECK(processes <= 11);
    } else {
        CHECK(processes >= 11); // a python3 found on PATH may be a shim that starts more
    }
    CHECK(usage.at("wallMs").to_number<std::uint64_t>() >= 300);
    // The same in the artifact, and in the phase log.
    const auto file =
        contracts::parse_object(read_text((dir / "artifacts" / "maka-subject.usage.json").string()), 1 << 20)
            .value();
    CHECK(file == usage);
    CHECK(r.err.find("usage (") != std::string::npos);
    // The orchestrator's wire carries nothing new.
    const auto& executed = out.at("executed").as_object();
    CHECK(executed.size() == 6);
    for (const char* key : {"token", "kind", "termination", "exitCode", "stdout", "diagnostic"}) {
        CHECK(executed.contains(key));
    }
    fs::remove_all(dir);
}

} // namespace
