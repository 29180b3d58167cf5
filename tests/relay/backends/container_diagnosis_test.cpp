// What the relay concludes about the task container from the engine's inspect, over recorded replies (the
// shape Docker 20.10's GET /containers/{id}/json answers with): paused, restarted, stopped, out of memory,
// removed, the engine down — each named for its cause, none read as the subject's doing.
#include "relay/backends/container_diagnosis.hpp"

#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;

const std::string started = "2026-12-05T15:40:01.123456789Z";

std::string reply(bool running, bool paused, bool oom, const std::string& started_at, int restarts = 0) {
    return R"({"Id":"c0ffee","RestartCount":)" + std::to_string(restarts) + R"(,"State":{"Status":")" +
           (paused    ? "paused"
            : running ? "running"
                      : "exited") +
           R"(","Running":)" + (running ? "true" : "false") + R"(,"Paused":)" + (paused ? "true" : "false") +
           R"(,"OOMKilled":)" + (oom ? "true" : "false") + R"(,"Pid":4242,"StartedAt":")" + started_at +
           R"("},"Config":{"User":"","Labels":{}}})";
}

container_condition condition_of(const std::string& body, const std::string& before = started) {
    return diagnose_container(parse_container(body), before).condition;
}

TEST_CASE("a container as it was is running: what ended the supervisor happened inside") {
    CHECK(condition_of(reply(true, false, false, started)) == container_condition::running);
    // Nothing recorded at the start (the first inspect did not say): no restart can be told.
    CHECK(condition_of(reply(true, false, false, started), "") == container_condition::running);
}

TEST_CASE("docker pause: paused, frozen rather than hung (Docker keeps Running true while paused)") {
    CHECK(condition_of(reply(true, true, false, started)) == container_condition::paused);
}

TEST_CASE("docker restart: running again with a new StartedAt") {
    const auto d = diagnose_container(
        parse_container(reply(true, false, false, "2026-12-05T15:41:07.000000001Z", 1)), started);
    CHECK(d.condition == container_condition::restarted);
    CHECK(d.detail.find("RestartCount 1") != std::string::npos);
}

TEST_CASE("stopped from outside, or out of memory as the engine records it") {
    CHECK(condition_of(reply(false, false, false, started)) == container_condition::stopped);
    CHECK(condition_of(reply(false, false, true, started)) == container_condition::out_of_memory);
    // Still running with an OOM kill recorded: a process inside (the supervisor, most likely) was killed.
    CHECK(condition_of(reply(true, false, true, started)) == container_condition::memory_killed);
}

TEST_CASE("the engine 404 is a removed container and any other failure is the engine unreachable") {
    const boost::system::result<container_facts, relay_error> removed =
        relay_error{relay_errc::not_found, "container c0ffee does not exist"};
    CHECK(diagnose_container(removed, started).condition == container_condition::missing);
    const boost::system::result<container_facts, relay_error> down =
        relay_error{relay_errc::engine, "cannot connect to the Docker engine at unix:///var/run/docker.sock"};
    const auto d = diagnose_container(down, started);
    CHECK(d.condition == container_condition::engine_unreachable);
    CHECK(d.detail.find("cannot connect") != std::string::npos);
}

TEST_CASE("the inspect reads HostConfig.ReadonlyRootfs as the reason an upload to the root fails") {
    const auto facts = parse_container(
        R"({"Id":"c0ffee","State":{"Running":true},"Config":{"User":""},"HostConfig":{"ReadonlyRootfs":true}})");
    REQUIRE(facts.has_value());
    CHECK(facts->readonly_rootfs);
    CHECK_FALSE(parse_container(reply(true, false, false, started))->readonly_rootfs);
}

} // namespace
