// End-to-end on Podman 4.3 behind its Docker-compatible API, as a user points the relay at it
// (DOCKER_HOST=unix://…/podman.sock): the docker backend's promises, rootful and rootless. The service is
// tests/e2e/podman_service.sh's (ctest fixtures); this file is built twice, one binary per mode, and the mode
// is the fixture's directory (MAKA_EVAL_PODMAN). Rootless: the relay runs as the service's owner.
#include "e2e/engine_fixture.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/trial_fixture.hpp"
#include "support/skip.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;
using namespace std::chrono_literals;

std::string file_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    std::string out = text.str();
    while (!out.empty() && out.back() == '\n') {
        out.pop_back();
    }
    return out;
}

// What podman_service.sh left in its directory for this mode.
struct podman_service {
    std::filesystem::path dir;
    std::string mode;
    std::string socket; // the DOCKER_HOST value, and the CLI's -H
    std::optional<relay_user> owner;
    std::vector<std::string> run_args;

    [[nodiscard]] std::vector<std::string> relay_env() const {
        auto env = base_env();
        env.push_back("DOCKER_HOST=" + socket);
        // The relay's record of installs is its user's: under its own home, not root's /tmp one.
        std::erase_if(env, [](const std::string& e) { return e.starts_with("HOME="); });
        env.push_back("HOME=" + (dir / "home").string());
        return env;
    }
    // A task container on this service.
    [[nodiscard]] std::unique_ptr<container> task(std::vector<std::string> run = {},
                                                  const std::string& image = "maka-eval-test-busybox:test",
                                                  const std::vector<std::string>& command = {}) const {
        run.insert(run.begin(), run_args.begin(), run_args.end());
        return std::make_unique<container>(run, image, command, socket);
    }
    [[nodiscard]] trial start(const std::vector<std::string>& scenario, const container& c,
                              std::vector<std::string> more = {}) const {
        return trial(scenario, c.relay_args(std::move(more)), relay_env(), base_env(), owner);
    }
};

// The service of this run, or a skip that says why there is none.
const podman_service& podman() {
    require_engine();
    static const podman_service service = [] {
        const char* dir = std::getenv("MAKA_EVAL_PODMAN");
        if (dir == nullptr || *dir == '\0') {
            skip("no Podman service for this run (MAKA_EVAL_PODMAN: the ctest fixture sets it)");
        }
        podman_service s;
        s.dir = dir;
        if (std::filesystem::exists(s.dir / "skip")) {
            skip("Podman (" + file_text(s.dir / "mode") + "): " + file_text(s.dir / "skip"));
        }
        if (!std::filesystem::exists(s.dir / "socket")) {
            skip("the Podman service did not start (see podman_service.sh's output in this ctest log)");
        }
        s.mode = file_text(s.dir / "mode");
        s.socket = file_text(s.dir / "socket");
        if (s.mode == "rootless") {
            const auto ids = file_text(s.dir / "user");
            s.owner = relay_user{static_cast<uid_t>(std::stoul(ids.substr(0, ids.find(':')))),
                                 static_cast<gid_t>(std::stoul(ids.substr(ids.find(':') + 1)))};
        }
        std::istringstream words(file_text(s.dir / "run-args"));
        for (std::string word; words >> word;) {
            s.run_args.push_back(word);
        }
        MESSAGE("Podman ", s.mode, " at ", s.socket, "; ", file_text(s.dir / "service.log"));
        return s;
    }();
    return service;
}

TEST_CASE("a trial with its frame, then a warm one that puts nothing in again") {
    const auto& p = podman();
    const auto c = p.task();
    for (int round = 0; round < 2; ++round) {
        CAPTURE(round);
        auto t =
            p.start(in_container({}, "\"$HELPER\" frame '{\"podman\":" + std::to_string(round) + "}'"), *c);
        const auto o = t.finish();
        INFO(o.relay_log);
        CHECK(o.exit_code == relay::exit_success);
        CHECK(executed_of(o).at("stdout").as_string() == "{\"podman\":" + std::to_string(round) + "}");
        // Rootful: cold, the helper on the session's stdin (3 calls); warm, found in place (3). Rootless
        // Podman gives its containers no cgroup of their own here, so this host cannot tell their processes
        // for sure: cold, the engine's upload after a look that finds nothing (5); warm, the upload again
        // without a look (4: Podman's download would cost ~230 ms, its upload ~5).
        const int calls = engine_calls(o.relay_log);
        CHECK(calls == (p.mode == "rootful" ? 3 : round == 0 ? 5 : 4));
        CHECK(o.relay_log.find("put in again") == std::string::npos);
        MESSAGE(p.mode, " trial ", round, ": ", calls, " engine calls");
    }
}

TEST_CASE("a warm trial writes the helper in again while a helper runs from it") {
    // Where this host cannot look (rootless), every warm trial writes the helper in again through the engine:
    // a helper running from the same file meanwhile (another trial's) must not notice — the engine replaces
    // the file, it does not write into a running program (ETXTBSY, or a changed program under it).
    const auto& p = podman();
    const auto c = p.task();
    REQUIRE(p.start(in_container({}, "\"$HELPER\" frame '{}'"), *c).finish().exit_code ==
            relay::exit_success);
    const auto inode = [&] { return c->exec("stat -L -c %i /.maka-eval/maka-eval-helper").out; };
    const auto before = inode();
    // A session that waits on its stdin, as another trial's would.
    REQUIRE(c->exec("(sleep 600 | /.maka-eval/maka-eval-helper session) </dev/null >/dev/null 2>&1 &")
                .exit_code == 0);
    // The session, not the launcher it starts on standby (also maka-eval-helper, `launch-subject`).
    std::string pid;
    REQUIRE(eventually(
        [&] {
            pid =
                c->exec("for p in $(pidof maka-eval-helper); do grep -q session /proc/$p/cmdline && echo $p; "
                        "done; true")
                    .out;
            return !pid.empty();
        },
        60000));
    pid.erase(pid.find_last_not_of(" \n") + 1);
    auto warm = p.start(in_container({}, "\"$HELPER\" frame '{\"warm\":1}'"), *c);
    const auto o = warm.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "{\"warm\":1}");
    // The helper's file replaced (rootless) or left in place (rootful, where this host compared the copy),
    // and the helper that ran from it still running, not a zombie (its /proc/PID/exe is not readable: the
    // helper makes itself non-dumpable).
    CHECK((inode() == before) == (p.mode == "rootful"));
    const auto state = c->exec("sed -n 's/^State:[[:space:]]*//p' /proc/" + pid + "/status").out;
    CAPTURE(state);
    CHECK(state.starts_with("S"));
    CHECK(c->exec("kill " + pid).exit_code == 0);
}

TEST_CASE("--user 1000 under a root supervisor the subject can neither kill nor stop") {
    const auto& p = podman();
    const auto c = p.task({"--user", "1000:1000"});
    auto t =
        p.start(in_container({}, "id -u; kill -9 $PPID || echo kill-refused; "
                                 "kill -STOP $PPID || echo stop-refused; \"$HELPER\" frame '{\"ok\":1}'"),
                *c);
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_success);
    CHECK(executed_of(o).at("stdout").as_string() == "{\"ok\":1}");
    CHECK(o.relay_log.find("supervisor=root") != std::string::npos);
    CHECK(c->exec("cat /logs/artifacts/maka-subject.stdout.txt")
              .out.starts_with("1000\nkill-refused\nstop-refused\n"));
}

TEST_CASE("SIGTERM with a TERM-ignoring subject and its setsid'd daemon, inside a 10 s budget") {
    const auto& p = podman();
    const auto c = p.task();
    cancel_settles_the_whole_tree(*c, p.relay_env(), 3701, p.owner);
    auto t = p.start(in_container({}, "trap '' TERM; : > /tmp/trapped; exec sleep 3703"), *c,
                     {"--teardown-timeout-ms", "10000"});
    t.wait_running(c->scope());
    REQUIRE(eventually([&] { return c->exec("test -e /tmp/trapped").exit_code == 0; }, 60000));
    const auto begun = std::chrono::steady_clock::now();
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(std::chrono::steady_clock::now() - begun < 10s);
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_cancelled);
    CHECK(o.relay_log.find("settled (") != std::string::npos);
    CHECK(o.relay_log.find("destroy") == std::string::npos);
    CHECK(c->running());
    CHECK(c->no_process_soon("sleep 3703"));
}

TEST_CASE("a SIGKILLed relay leaves nothing running (the helper settles on stdin EOF)") {
    const auto& p = podman();
    const auto c = p.task();
    killed_relay_leaves_nothing(*c, p.relay_env(), 3705, p.owner);
}

TEST_CASE("run --follow shows the subject's output while it runs") {
    const auto& p = podman();
    const auto c = p.task();
    std::vector<std::string> argv{relay_binary, "run", "--follow"};
    for (auto& arg : c->relay_args()) {
        argv.push_back(std::move(arg));
    }
    argv.insert(argv.end(),
                {"--", "sh", "-c",
                 "echo one; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo two >&2; echo three"});
    if (p.owner) {
        argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid", std::to_string(p.owner->uid), "--regid",
                                   std::to_string(p.owner->gid), "--clear-groups", "--"});
    }
    child_process relay(argv, p.relay_env());
    CHECK(relay.read_line(60000) == "one"); // live: the subject waits for /tmp/go
    REQUIRE(c->exec("touch /tmp/go").exit_code == 0);
    CHECK(relay.read_line(30000) == "three");
    CHECK(relay.wait(30000) == 0);
    CHECK(relay.stderr_text().find("\ntwo\n") != std::string::npos);
}

TEST_CASE("a stopped and a missing container are named, nothing else is tried") {
    const auto& p = podman();
    trial missing(in_container({}, "exit 0"), {"--env", "docker:maka-e2e-does-not-exist"}, p.relay_env(),
                  base_env(), p.owner);
    auto o = missing.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("does not exist") != std::string::npos);
    const auto c = p.task();
    REQUIRE(docker({"stop", "-t", "0", c->name}, 60000, p.socket).exit_code == 0);
    auto stopped = p.start(in_container({}, "exit 0"), *c);
    o = stopped.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("not running") != std::string::npos);
}

TEST_CASE("a container without /bin/sh gets the helper through the upload, 20 fresh ones in a row") {
    // Podman writes the failed exec's error on its stream and may keep the stream open: the exec's own
    // state ends the wait at once, and the engine's words are labelled as the engine's.
    const auto& p = podman();
    const auto logs =
        std::filesystem::temp_directory_path() / ("maka-podman-logs-" + std::to_string(::getpid()));
    std::filesystem::create_directories(logs / "logs" / "agent");
    for (int round = 0; round < 20; ++round) {
        CAPTURE(round);
        const auto c = p.task({"-i"}, "maka-eval-helper:test", {"session"});
        REQUIRE(docker({"cp", (logs / "logs").string(), c->name + ":/"}, 30000, p.socket).exit_code == 0);
        const auto begun = std::chrono::steady_clock::now();
        trial t({"--", "/.maka-eval/maka-eval-helper", "frame", "{\"distroless\":true}"}, c->relay_args(),
                p.relay_env(), base_env(), p.owner);
        const auto o = t.finish(60000);
        const auto took =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - begun);
        INFO(o.relay_log);
        REQUIRE(o.exit_code == relay::exit_success);
        CHECK(executed_of(o).at("stdout").as_string() == "{\"distroless\":true}");
        CHECK(took < 10s); // not the 30 s of --engine-timeout-ms
        // Whatever the engine wrote is said to be not the helper's.
        std::istringstream lines(o.relay_log);
        for (std::string line; std::getline(lines, line);) {
            if (line.find("Error: ") != std::string::npos) {
                CHECK(line.starts_with("maka-eval-relay: not from the helper"));
            }
        }
    }
    std::filesystem::remove_all(logs);
}

TEST_CASE("a --user the container's filesystem will not let in is one sentence naming the directory") {
    const auto& p = podman();
    const auto c = p.task();
    REQUIRE(c->exec("chmod 0700 /").exit_code ==
            0); // what rootless Podman's vfs storage shows some images as
    auto t = p.start(in_container({}, "exit 0"), *c, {"--user", "1000"});
    const auto o = t.finish();
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("may not enter / (mode 0700, owner 0:0)") != std::string::npos);
    CHECK(o.transcript.at("executed").is_null()); // never started: no exit 126 to blame on the subject
}

} // namespace
