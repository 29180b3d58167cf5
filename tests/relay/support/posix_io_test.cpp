// The relay's whole reads and writes: a secret read to EOF within its limit (and refused past it, whatever
// was read gone), and a write that goes out whole through a pipe smaller than it.
#include "relay/support/posix_io.hpp"

#include <csignal>
#include <string>
#include <thread>
#include <unistd.h>

#include <doctest/doctest.h>

namespace {

using maka_eval::relay::read_secret;
using maka_eval::relay::write_all;

// A pipe holding `bytes` and closed for writing (`bytes` fits in the pipe's buffer).
int pipe_with(const std::string& bytes) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    REQUIRE(write_all(fds[1], bytes));
    ::close(fds[1]);
    return fds[0];
}

TEST_CASE("read_secret reads to EOF up to its limit, and past it is file_too_large") {
    const std::string bytes(10000, 's'); // over one read buffer
    int fd = pipe_with(bytes);
    auto exact = read_secret(fd, bytes.size());
    ::close(fd);
    REQUIRE(exact.has_value());
    CHECK(*exact == bytes);

    fd = pipe_with(bytes);
    auto over = read_secret(fd, bytes.size() - 1);
    ::close(fd);
    REQUIRE_FALSE(over.has_value());
    CHECK(over.error() == boost::system::errc::file_too_large);

    fd = pipe_with("");
    auto empty = read_secret(fd, 16);
    ::close(fd);
    REQUIRE(empty.has_value());
    CHECK(empty->empty());
}

TEST_CASE("read_secret says why a descriptor cannot be read") {
    auto closed = read_secret(-1, 16);
    REQUIRE_FALSE(closed.has_value());
    CHECK(closed.error() == boost::system::errc::bad_file_descriptor);
}

TEST_CASE("write_all writes everything through a pipe smaller than the data, and fails on a closed reader") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const std::string bytes(1 << 20, 'w'); // 16 times a default pipe buffer: short writes on the way
    std::string received;
    std::thread reader([&] {
        char chunk[8192];
        ssize_t got = 0;
        while ((got = ::read(fds[0], chunk, sizeof chunk)) > 0) {
            received.append(chunk, static_cast<std::size_t>(got));
        }
    });
    const bool wrote = write_all(fds[1], bytes);
    ::close(fds[1]);
    reader.join();
    ::close(fds[0]);
    CHECK(wrote);
    CHECK(received == bytes);

    REQUIRE(::pipe(fds) == 0);
    ::close(fds[0]);
    const auto previous = std::signal(SIGPIPE, SIG_IGN); // the relay ignores SIGPIPE too: EPIPE instead
    CHECK_FALSE(write_all(fds[1], "x"));
    std::signal(SIGPIPE, previous);
    ::close(fds[1]);
}

} // namespace
