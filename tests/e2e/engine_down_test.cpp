// The engine itself going down mid-trial: the fault engine (tests/e2e/tls_engine.sh with a bridge of its
// own, a dockerd of this suite's alone, which ctest starts as the fixture and stops after) is SIGKILLed while
// the subject runs, and left down (the fixture's stop removes what outlived it). Its containers keep running
// under containerd, as they do when a real engine crashes. The relay must name the engine, say that the
// subject's state is unknown, and neither accuse the subject nor claim that nothing was left to stop.
#include "e2e/engine_fixture.hpp"
#include "in_container/fixture.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/trial_fixture.hpp"
#include "support/process.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;
namespace fs = std::filesystem;

fs::path engine_dir() {
    const char* dir = std::getenv("MAKA_EVAL_FAULT_ENGINE");
    REQUIRE(dir != nullptr);
    REQUIRE(fs::exists(fs::path(dir) / "docker.sock"));
    return dir;
}

std::string engine_host() {
    return "unix://" + (engine_dir() / "docker.sock").string();
}

process_result engine_script(const std::string& command) {
    auto env = base_env();
    env.emplace_back("MAKA_EVAL_E2E=1"); // the script acts only in a run that prepared engines
    return run_process({"/bin/bash", MAKA_EVAL_ENGINE_SCRIPT, command, engine_dir().string()}, "", env,
                       60000);
}

// Whether a process whose argv is exactly `args` runs on this host (the container's processes are this
// host's too); a zombie is dead.
bool host_has_process(const std::string& args) {
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const auto name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        std::ifstream cmdline(entry.path() / "cmdline");
        std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
        std::replace(text.begin(), text.end(), '\0', ' ');
        std::ifstream stat(entry.path() / "stat");
        std::string stat_text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
        const auto state_at = stat_text.rfind(") ");
        const bool zombie = state_at != std::string::npos && stat_text.compare(state_at + 2, 1, "Z") == 0;
        if (!zombie && text == args + " ") {
            return true;
        }
    }
    return false;
}

} // namespace

TEST_CASE(
    "faults: the engine killed mid-run is named, the subject's state unknown, nothing accused or destroyed") {
    require_engine();
    container c({}, "maka-eval-test-busybox:test", {}, engine_host());
    auto env = base_env();
    env.push_back("DOCKER_HOST=" + engine_host());
    trial t(in_container({}, "sleep 3656"), c.relay_args({"--teardown-timeout-ms", "6000"}), env);
    t.wait_running(c.scope());
    REQUIRE(host_has_process("sleep 3656"));
    REQUIRE(engine_script("kill").exit_code == 0);
    const auto o = t.finish(30000);
    INFO(o.relay_log);
    CHECK(o.exit_code == relay::exit_environment);
    CHECK(o.relay_log.find("the Docker engine stopped answering") != std::string::npos);
    CHECK(o.relay_log.find("the subject's state is unknown") != std::string::npos);
    CHECK(o.relay_log.find("nothing was left to stop") == std::string::npos);
    CHECK(o.relay_log.find("from inside") == std::string::npos);
    CHECK(o.relay_log.find("destroy (") == std::string::npos);
    // The relay ended inside its budget while the engine is still down (the subject itself keeps running
    // under containerd until the engine is back and cleans up: "unknown" is the truth).
    CHECK(o.relay_log.find("recovered (") != std::string::npos);
    CHECK(engine_script("status").exit_code != 0);
}
