// The shared POSIX I/O: a read to EOF within its limit (and refused past it, a secret's bytes gone), a write
// that goes out whole through a pipe smaller than it, files opened close-on-exec and never through a link
// when asked, and the descriptor owner.
#include "posix/io.hpp"

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::posix;

// The tests' own reads: a secret read is a read_all that wipes its buffers.
boost::system::result<std::string> read_secret(int fd, std::size_t limit) {
    return read_all(fd, limit, contents::secret);
}

// A pipe holding `bytes` and closed for writing (`bytes` fits in the pipe's buffer).
int pipe_with(const std::string& bytes) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    REQUIRE(write_all(fds[1], bytes));
    ::close(fds[1]);
    return fds[0];
}

TEST_CASE("read_all reads to EOF up to its limit, and past it is file_too_large") {
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

TEST_CASE("read_all reads a regular file in place by its size, and a pipe past its first buffer") {
    const auto path = std::filesystem::temp_directory_path() / ("maka-eval-io-" + std::to_string(::getpid()));
    std::string bytes(std::size_t{1} << 20U, 'h');
    bytes += "end";
    { std::ofstream(path, std::ios::binary) << bytes; }
    auto whole = read_file(path.string(), bytes.size());
    CHECK((whole && *whole == bytes));
    auto over = read_file(path.string(), bytes.size() - 1);
    REQUIRE_FALSE(over.has_value());
    CHECK(over.error() == boost::system::errc::file_too_large);
    std::filesystem::remove(path);

    const std::string piped(40000, 'p'); // grows twice from the first 16 KiB, within the pipe's buffer
    const int fd = pipe_with(piped);
    auto read = read_secret(fd, piped.size());
    ::close(fd);
    CHECK((read && *read == piped));
}

TEST_CASE("read_all says why a descriptor cannot be read") {
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

TEST_CASE("read_file: whole, bounded, close-on-exec, and O_NOFOLLOW refuses a link") {
    const auto dir = std::filesystem::temp_directory_path() / ("maka-posix-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto file = (dir / "f").string();
    std::ofstream(file) << "twelve bytes";
    CHECK(read_file(file, 12).value() == "twelve bytes");
    CHECK(read_file(file, 11).error() == boost::system::errc::file_too_large);
    CHECK(read_file((dir / "missing").string(), 64).error() ==
          boost::system::errc::no_such_file_or_directory);
    std::filesystem::create_symlink(file, dir / "link");
    CHECK(read_file((dir / "link").string(), 64).value() == "twelve bytes");
    CHECK(read_file((dir / "link").string(), 64, O_NOFOLLOW).error() ==
          boost::system::errc::too_many_symbolic_link_levels);
    const unique_fd fd(open_retry(file, O_RDONLY));
    REQUIRE(fd);
    CHECK((::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("unique_fd closes what it holds once, and hands it over on a move or a release") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    {
        unique_fd a(fds[0]);
        unique_fd b(std::move(a));
        CHECK_FALSE(a);
        CHECK(b.get() == fds[0]);
        unique_fd c;
        c = std::move(b);
        CHECK(c.get() == fds[0]);
    }
    CHECK(::fcntl(fds[0], F_GETFD) == -1); // closed when c went
    unique_fd kept(fds[1]);
    const int raw = kept.release();
    CHECK_FALSE(kept);
    CHECK(::fcntl(raw, F_GETFD) != -1); // released: still open, ours to close
    ::close(raw);
}

} // namespace
