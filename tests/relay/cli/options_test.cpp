// The relay's command line: --env as a typed backend choice, and the options that only go together.
#include "relay/cli/options.hpp"

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
