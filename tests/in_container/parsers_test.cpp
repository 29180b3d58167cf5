// The helper's small readers, each on its own: /proc/<pid>/stat lines (a command name may hold spaces and
// parentheses), the scope record and the bounded control-line reader.
#include "in_container/line_reader.hpp"
#include "in_container/process_table.hpp"
#include "in_container/scope_file.hpp"

#include <string>
#include <unistd.h>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::in_container;

TEST_CASE("a /proc stat line: the command name may hold spaces and parentheses") {
    const std::string tail = " S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
    const auto plain = parse_stat_line("42 (sleep)" + tail);
    REQUIRE(plain);
    CHECK(plain->pid == 42);
    CHECK(plain->state == 'S');
    CHECK(plain->ppid == 1);
    CHECK(plain->pgid == 42);
    CHECK(plain->sid == 42);
    CHECK(plain->start_time == 12345);
    // A subject may name itself anything: ") Z 1 1 1" inside the name must not be read as the fields.
    const auto tricky = parse_stat_line("43 (a) Z 1 1 1 (b)" + tail);
    REQUIRE(tricky);
    CHECK(tricky->pid == 43);
    CHECK(tricky->state == 'S');
    CHECK(tricky->start_time == 12345);
    CHECK_FALSE(parse_stat_line(""));
    CHECK_FALSE(parse_stat_line("44 (no closing paren S 1 2 3"));
    CHECK_FALSE(parse_stat_line("45 (short) S 1"));
}

TEST_CASE("the scope record reads back what is written, and nothing else") {
    const scope_record record{1234, 987654321, 77, 1111};
    const auto text = format_scope(record);
    CHECK(text.starts_with("1234\n")); // the original's first line: the pgid alone
    const auto back = parse_scope(text);
    REQUIRE(back);
    CHECK(back->pgid == 1234);
    CHECK(back->leader_start == 987654321);
    CHECK(back->supervisor == 77);
    CHECK(back->supervisor_start == 1111);
    CHECK_FALSE(parse_scope("1234\n")); // the original's bare pgid: no supervisor to check
    CHECK_FALSE(parse_scope("0\nleader-start 1\nsupervisor 2 3\n"));
    CHECK_FALSE(parse_scope("12\nleader 1\nsupervisor 2 3\n"));
    CHECK_FALSE(parse_scope("12\nleader-start 1\nsupervisor -2 3\n"));
    CHECK_FALSE(parse_scope(""));
}

// A pipe whose write end the test feeds.
struct pipe_pair {
    int fds[2] = {-1, -1};
    pipe_pair() { REQUIRE(::pipe(fds) == 0); }
    ~pipe_pair() {
        for (const int fd : fds) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
    }
    pipe_pair(const pipe_pair&) = delete;
    pipe_pair& operator=(const pipe_pair&) = delete;
    void write(const std::string& bytes) const {
        REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    }
    void close_write() {
        ::close(fds[1]);
        fds[1] = -1;
    }
};

TEST_CASE("control lines: split across reads, an oversize one dropped whole, a last one without newline") {
    pipe_pair p;
    line_reader reader(p.fds[0], 8);
    maka_eval::contracts::secret_text line;
    p.write("ab");
    CHECK(reader.fill() == line_reader::fill_result::data);
    CHECK(reader.pop(line) == line_reader::pop_result::none); // no newline yet
    p.write("c\n0123456789abcdef");
    CHECK(reader.fill() == line_reader::fill_result::data);
    CHECK(reader.pop(line) == line_reader::pop_result::line);
    CHECK(line.view() == "abc");
    // Past the bound: reported once, and what follows up to its newline is dropped too.
    CHECK(reader.pop(line) == line_reader::pop_result::oversize);
    p.write("more-of-it\nok\nlast");
    CHECK(reader.fill() == line_reader::fill_result::data);
    CHECK(reader.pop(line) == line_reader::pop_result::line);
    CHECK(line.view() == "ok");
    CHECK(reader.pop(line) == line_reader::pop_result::none);
    p.close_write();
    CHECK(reader.fill() == line_reader::fill_result::eof);
    CHECK(reader.at_eof());
    CHECK(reader.pop(line) == line_reader::pop_result::line);
    CHECK(line.view() == "last");
    CHECK(reader.pop(line) == line_reader::pop_result::none);
}

} // namespace
