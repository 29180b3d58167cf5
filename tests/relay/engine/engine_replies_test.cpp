// An exec's state as Docker 20.10 and Podman 4.3 answer GET /exec/{id}/json (recorded on this machine, only
// the fields read kept): when the state alone says the exec has ended — what lets the relay stop waiting on
// a stream Podman keeps open after an exec that failed to start.
#include "relay/engine/engine_replies.hpp"

#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;

std::optional<int> ended(const std::string& body) {
    const auto state = parse_exec_state(body);
    REQUIRE(state.has_value());
    return state->ended_with();
}

TEST_CASE("an exec's state: created, running, ended, failed to start — on Docker and on Podman") {
    // Docker: created (no ExitCode yet), ended with its pid kept, failed to start (no pid, 126).
    CHECK_FALSE(ended(R"({"Running":false,"ExitCode":null,"Pid":0})"));
    CHECK_FALSE(ended(R"({"Running":true,"ExitCode":null,"Pid":14445})"));
    CHECK(ended(R"({"Running":false,"ExitCode":0,"Pid":14445})") == 0);
    CHECK(ended(R"({"Running":false,"ExitCode":126,"Pid":0})") == 126);
    // Podman: created and an exit 0 read the same (Running false, ExitCode 0, Pid 0): not an end by itself;
    // running; an exit 3; failed to start (127, "/bin/sh": no such file).
    CHECK_FALSE(ended(R"({"Running":false,"ExitCode":0,"Pid":0})"));
    CHECK_FALSE(ended(R"({"Running":true,"ExitCode":0,"Pid":13800})"));
    CHECK(ended(R"({"Running":false,"ExitCode":3,"Pid":0})") == 3);
    CHECK(ended(R"({"Running":false,"ExitCode":127,"Pid":0})") == 127);
    // Fields missing or out of range say nothing.
    CHECK_FALSE(ended(R"({"Running":false})"));
    CHECK_FALSE(ended(R"({"Running":false,"ExitCode":300,"Pid":1})"));
    CHECK_FALSE(parse_exec_state("not json").has_value());
}

} // namespace
