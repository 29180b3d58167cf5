// The relay's command line: --env as a typed backend choice, and the options that only go together.
#include "relay/cli/options.hpp"
#include "relay/trial/subject_stdin.hpp"

#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;

// An empty environment, but for a HOME without a ~/.docker: never this machine's docker context.
std::optional<std::string> no_env(const char* name) {
    return std::string_view(name) == "HOME" ? std::optional<std::string>("/nonexistent-maka-eval-test-home")
                                            : std::nullopt;
}

boost::system::result<run_options, relay_error> run_with(std::vector<std::string_view> args) {
    args.emplace_back("--");
    args.emplace_back("true");
    return parse_run(args, &no_env);
}

std::string error_of(std::vector<std::string_view> args) {
    const auto parsed = run_with(std::move(args));
    return parsed ? std::string("ok") : parsed.error().message;
}

TEST_CASE("run -i, -t, -it and --timeout: what they set, and what is refused") {
    const auto both = run_with({"-it"});
    REQUIRE(both.has_value());
    CHECK(both->interactive);
    CHECK(both->tty);
    const auto one = run_with({"-i"});
    REQUIRE(one.has_value());
    CHECK((one->interactive && !one->tty));
    CHECK(run_with({"--tty"})->tty);
    CHECK(parse_duration_ms("1500ms") == 1500);
    CHECK(parse_duration_ms("30s") == 30'000);
    CHECK(parse_duration_ms("30") == 30'000);
    CHECK(parse_duration_ms("5m") == 300'000);
    CHECK(parse_duration_ms("2h") == 7'200'000);
    for (const auto* bad : {"", "0", "0s", "5x", "s", "-5s", "1.5s", "5 s", "99999999999h"}) {
        CAPTURE(bad);
        CHECK(!parse_duration_ms(bad));
    }
    const auto limited = run_with({"--timeout", "5m"});
    REQUIRE(limited.has_value());
    const auto config = trial_config_of(limited->common);
    CHECK(config.time_limit == std::chrono::milliseconds(300'000));
    CHECK(config.time_limit_text == "5m");
    CHECK(error_of({"--timeout", "soon"}).find("--timeout takes a duration") != std::string::npos);
    CHECK(error_of({"-it", "--env", "bridge", "--bridge-fd", "3"})
              .find("-i and -t need a backend that streams") != std::string::npos);
}

TEST_CASE("the terminal's escape is three 0x1d bytes in a row, found across reads, never forwarded") {
    escape_watch watch;
    CHECK(watch.pass("ls\r") == "ls\r");
    CHECK(watch.pass("\x1d") == ""); // held back: it may be the escape
    CHECK(watch.pass("\x1d"
                     "x") == "\x1d\x1d"
                             "x"); // broken off: typed after all
    CHECK(!watch.escaped());
    CHECK(watch.pass("a\x1d\x1d") == "a");
    CHECK(watch.pass("\x1d"
                     "after") == ""); // complete: what follows is not the subject's
    CHECK(watch.escaped());
}

TEST_CASE("--env chooses the backend, and docker names its container") {
    const auto local = run_with({});
    REQUIRE(local.has_value());
    CHECK(local->common.backend == backend_kind::local);

    const auto docker = run_with({"--env", "docker:task-1"});
    REQUIRE(docker.has_value());
    CHECK(docker->common.backend == backend_kind::docker);
    CHECK(docker->common.container == "task-1");

    const auto compose = run_with({"--compose-project", "p0"});
    REQUIRE(compose.has_value());
    CHECK(compose->common.backend == backend_kind::docker);
    CHECK(compose->common.container.empty());
    CHECK(compose->common.compose_project == "p0");
}

TEST_CASE("--cwd names the subject's working directory, absolute only") {
    const auto given = run_with({"--env", "docker:c", "--cwd", "/srv/task"});
    REQUIRE(given.has_value());
    CHECK(given->common.cwd == "/srv/task");
    CHECK(run_with({})->common.cwd.empty()); // the environment's own default
    for (const std::string_view bad : {"srv/task", ""}) {
        CHECK(error_of({"--cwd", bad}) == "--cwd takes an absolute directory");
    }
}

TEST_CASE("a malformed or conflicting backend choice is a usage error that says what to give") {
    CHECK(error_of({"--env", "docker:"}) == "--env takes local, docker:CONTAINER or bridge");
    CHECK(error_of({"--env", "kubernetes:x"}) == "--env takes local, docker:CONTAINER or bridge");
    CHECK(error_of({"--env", "docker:a", "--compose-project", "p"}) ==
          "--env docker:CONTAINER and --compose-project both name the container: give one");
    CHECK(error_of({"--env", "bridge"}).starts_with("--env bridge and --bridge-fd go together"));
}

} // namespace
