// The helper's live output to the relay: it never waits for a reader, what it leaves out is counted, and
// what it sends plus what it counts is everything the subject wrote.
#include "in_container/capture/follow_output.hpp"

#include <chrono>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using contracts::output_stream_name;
using in_container::follow_output;

struct pipe_pair {
    int read_end = -1;
    int write_end = -1;
    pipe_pair() {
        int fds[2];
        REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
        read_end = fds[0];
        write_end = fds[1];
    }
    ~pipe_pair() {
        ::close(read_end);
        ::close(write_end);
    }
    pipe_pair(const pipe_pair&) = delete;
    pipe_pair& operator=(const pipe_pair&) = delete;
    // Everything written so far, as `output` messages: bytes carried and bytes said to be dropped.
    std::pair<std::uint64_t, std::uint64_t> drain() const {
        (void)::fcntl(read_end, F_SETFL, O_NONBLOCK);
        std::string text;
        char buffer[65536];
        ssize_t got = 0;
        while ((got = ::read(read_end, buffer, sizeof buffer)) > 0) {
            text.append(buffer, static_cast<std::size_t>(got));
        }
        std::uint64_t carried = 0;
        std::uint64_t dropped = 0;
        std::size_t start = 0;
        while (start < text.size()) {
            const auto end = text.find('\n', start);
            REQUIRE(end != std::string::npos);
            auto message =
                contracts::parse_session_message(std::string_view(text).substr(start, end - start));
            REQUIRE(message.has_value());
            const auto& output = std::get<contracts::output_message>(*message);
            carried += output.size; // the raw bytes after the line
            dropped += output.dropped;
            start = end + 1 + static_cast<std::size_t>(output.size);
            REQUIRE(start <= text.size());
        }
        return {carried, dropped};
    }
};

TEST_CASE("with nobody reading, offering 32 MiB returns at once and counts what had no room") {
    pipe_pair p;
    follow_output out(p.write_end);
    const std::string block(1 << 20, 'x');
    const auto begun = std::chrono::steady_clock::now();
    for (int i = 0; i < 32; ++i) {
        out.offer(output_stream_name::stdout_stream, block);
    }
    out.finish();
    // Never blocked: a write into the full pipe would have hung this test.
    CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(10));
    CHECK(out.dropped_total() > 0);
    const auto [carried, dropped] = p.drain();
    CHECK(carried > 0);
    CHECK(carried + dropped == std::uint64_t{32} << 20);
    CHECK(dropped == out.dropped_total());
}

TEST_CASE("with room, every byte goes out in chunks no larger than the protocol allows") {
    pipe_pair p;
    follow_output out(p.write_end);
    out.offer(output_stream_name::stderr_stream, std::string(40000, '\0'));
    out.finish();
    CHECK(out.dropped_total() == 0);
    const auto [carried, dropped] = p.drain();
    CHECK(carried == 40000);
    CHECK(dropped == 0);
}

} // namespace
