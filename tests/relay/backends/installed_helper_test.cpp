// The installed helper's check, the parts that need no container: what cannot be looked at from here is
// said as such (the caller then downloads through the engine), and a download is this build's only when its
// bytes and mode are. The look into a real container is tested end to end (tests/e2e/docker_test.cpp).
#include "contracts/digest.hpp"
#include "relay/backends/installed_helper.hpp"
#include "relay/engine/tar_archive.hpp"

#include <unistd.h>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;

TEST_CASE("a process that is not the container's, or no process, cannot be looked into from here") {
    const std::string self = "/proc/self/exe";
    // Our own process: no container's id in its cgroup, so not taken for that container's first process.
    CHECK_FALSE(compare_on_this_host(::getpid(), "0123456789abcdef0123456789abcdef", "/bin/sh", self));
    CHECK_FALSE(compare_on_this_host(0, "0123456789abcdef0123456789abcdef", "/bin/sh", self));
    CHECK_FALSE(compare_on_this_host(::getpid(), "short", "/bin/sh", self));
    CHECK_FALSE(compare_on_this_host(::getpid(), "0123456789abcdef0123456789abcdef", "relative", self));
}

TEST_CASE("a download is this build's helper only with its bytes, as a file nobody else may write") {
    const std::string bytes = "the helper's bytes";
    const auto digest = maka_eval::contracts::sha256_hex(bytes);
    const auto entry_only = [](const std::string& archive) { return archive.substr(512); }; // past the dir
    CHECK(compare_download(entry_only(tar_one_file("d", "helper", bytes, 0755)), digest) ==
          installed_copy::genuine);
    CHECK(compare_download(entry_only(tar_one_file("d", "helper", bytes + "!", 0755)), digest) ==
          installed_copy::other);
    CHECK(compare_download(entry_only(tar_one_file("d", "helper", bytes, 0777)), digest) ==
          installed_copy::other);
    CHECK(compare_download(tar_one_file("d", "helper", bytes, 0755), digest) ==
          installed_copy::other); // a dir
    CHECK(compare_download("", digest) == installed_copy::other);
}

} // namespace
