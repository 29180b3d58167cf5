// The memory cgroup's OOM-kill count: where it is for cgroup v1, v2 and hybrid hosts, and how it is read.
#include "relay/backends/host_cgroup.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;

TEST_CASE("the OOM count's file: v1's memory controller, v2's unified path, v1 first on a hybrid host") {
    const std::string v1 = "12:pids:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n";
    CHECK(oom_count_file(v1, "/sys/fs/cgroup") == "/sys/fs/cgroup/memory/docker/abc/memory.oom_control");
    CHECK(oom_count_file("0::/system.slice/docker-abc.scope\n", "/sys/fs/cgroup") ==
          "/sys/fs/cgroup/system.slice/docker-abc.scope/memory.events");
    CHECK(oom_count_file("5:cpu,memory:/docker/abc\n0::/docker/abc\n", "/r") ==
          "/r/memory/docker/abc/memory.oom_control");
    CHECK(oom_count_file("3:cpu:/docker/abc\n", "/r").empty());
    CHECK(oom_count_file("4:memory:/docker/../../etc\n", "/r").empty());
    CHECK(oom_count_file("", "/r").empty());
}

TEST_CASE("the oom_kill line of memory.oom_control and memory.events") {
    CHECK(parse_oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n") == 3U);
    CHECK(parse_oom_kills("low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n") == 1U);
    CHECK_FALSE(parse_oom_kills("oom_kill_disable 0\nunder_oom 0\n"));
    CHECK_FALSE(parse_oom_kills("oom_kill x\n"));
    CHECK_FALSE(parse_oom_kills(""));
}

} // namespace
