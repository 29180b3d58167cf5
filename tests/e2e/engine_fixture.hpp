// Test support for the end-to-end tests on a real Docker engine: the engine's CLI, task containers from the
// BusyBox-only test image, and what a test needs to look into them. A container lives on the default engine
// or on another one named by its CLI host (`-H`), such as the TLS engine of tests/e2e/tls_engine.sh.
#pragma once

#include "relay/trial_fixture.hpp"
#include "support/process.hpp"

#include <functional>
#include <string>
#include <vector>

namespace maka_eval::test {

inline const std::string in_container_helper = "/.maka-eval/maka-eval-helper";

// The helper that goes into containers: this build's, unless MAKA_EVAL_TEST_HELPER names another (a
// sanitizer build's relay is tested with the release build's static helper: its own cannot be static).
std::string container_helper();

// Exits 77 (skipped) unless scripts/test.sh prepared an engine for this run (MAKA_EVAL_E2E=1).
void require_engine();

// The docker CLI's path.
std::string docker_cli();

// The docker CLI with `args`; `engine` (a -H value) when not the default engine.
process_result docker(std::vector<std::string> args, int timeout_ms = 30000, const std::string& engine = {});

// A task container from the BusyBox-only image, removed at the end.
class container {
  public:
    explicit container(std::vector<std::string> run_args = {},
                       const std::string& image = "maka-eval-test-busybox:test",
                       const std::vector<std::string>& command = {}, std::string engine = {});
    ~container();
    container(const container&) = delete;
    container& operator=(const container&) = delete;

    [[nodiscard]] process_result exec(const std::string& script, const std::string& user = "0") const;
    [[nodiscard]] std::vector<std::string> relay_args(std::vector<std::string> more = {}) const;
    [[nodiscard]] std::function<std::string()> scope() const;
    [[nodiscard]] bool running() const;
    // Whether a process with exactly this command line runs (`prefix`: one starting with it). `ps` must
    // answer: a probe that cannot run fails the test, never passes it. A zombie is dead.
    [[nodiscard]] bool has_process(const std::string& command_line, bool prefix = false) const;
    [[nodiscard]] bool no_process_soon(const std::string& marker, bool prefix = false) const;

    std::string name;
    std::string engine; // -H of its engine; empty: the default one
};

// Orchestrator arguments for a subject `sh -c SCRIPT` that calls the helper installed in the container.
std::vector<std::string> in_container(std::vector<std::string> scenario, const std::string& script);

// Scenarios run on every engine the tests reach (the local socket, mutual TLS): the same assertions whichever
// way the relay gets there. `relay_env` is the relay's environment; `sleep_base` makes the subject's command
// lines (sleep N, N+1) unique to the calling test.
// A TERM-ignoring subject with a setsid'd TERM-ignoring daemon, cancelled by SIGTERM: both gone, the scope
// file too, the container intact.
void cancel_settles_the_whole_tree(const container& c, const std::vector<std::string>& relay_env,
                                   int sleep_base, std::optional<relay_user> as = {});
// The relay SIGKILLed mid-run: its connection ends, the helper sees stdin EOF and settles the subject, and
// nothing of the trial is left running.
void killed_relay_leaves_nothing(const container& c, const std::vector<std::string>& relay_env,
                                 int sleep_base, std::optional<relay_user> as = {});

// The relay's engineCalls figure from its log ("done … engineCalls=N").
int engine_calls(const std::string& log);

} // namespace maka_eval::test
