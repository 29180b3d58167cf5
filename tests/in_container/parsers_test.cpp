// The helper's small readers, each on its own: /proc/<pid>/stat lines (a command name may hold spaces and
// parentheses), the scope record, the bounded control-line reader and the line parsed as it arrives.
#include "in_container/base/line_reader.hpp"
#include "in_container/base/streamed_message.hpp"
#include "in_container/process/process_table.hpp"
#include "in_container/process/scope_file.hpp"

#include <random>
#include <string>
#include <unistd.h>
#include <vector>

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

// What a whole-line parse says of `line`: the message re-serialized, or the error's text.
std::string verdict(const boost::system::result<maka_eval::contracts::session_message,
                                                maka_eval::contracts::failure>& parsed) {
    return parsed ? maka_eval::contracts::serialize(*parsed) : "error: " + parsed.error().message();
}

TEST_CASE("a line parsed as it arrives says what the whole line's parse says, however it is split") {
    namespace contracts = maka_eval::contracts;
    contracts::run_request run;
    run.argv = {"sh", "-c", "echo \"$TOKEN\" \u00e9"};
    for (int i = 0; i < 40; ++i) {
        run.credentials.emplace_back("CRED_" + std::to_string(i),
                                     std::string(300, static_cast<char>('a' + i % 26)));
    }
    run.environment.emplace_back("QUOTED", "a \"b\" \\ c\td\u00e9\u2028");
    const std::string whole = contracts::serialize(run);
    const std::string good = whole.substr(0, whole.size() - 1); // without its newline
    // Each line, and whether the incremental parse takes it (a refused one is parsed whole again).
    const std::vector<std::pair<std::string, bool>> lines = {
        {good, true},
        {R"({"type":"cancel"})", true},
        {R"({"type":"run","argv":["x"]}   )", true},
        {R"({"type":"run","argv":["a"],"argv":["b"]})", true}, // the last of duplicate keys, as Python keeps
        {R"({"type":"bogus"})", true},                         // JSON, but no message: from_json says so
        {"", false},
        {"   ", false},
        {R"([1,2])", false},
        {R"({"type":"run","argv":["x"]} trailing)", false},
        {"{\"type\":\"run\",\"argv\":[\"\xff\"]}", false},         // not UTF-8
        {"{\"type\":\"run\",\"argv\":[\"\xed\xa0\x80\"]}", false}, // a surrogate's bytes
        {good.substr(0, good.size() / 2), false},                  // cut off
    };
    std::mt19937 random(20261206);
    streamed_message parsing; // one for every line in turn, as the session keeps it
    for (const auto& entry : lines) {
        const std::string& line = entry.first; // not a structured binding: clang 14 cannot capture one
        const bool streamed = entry.second;
        CAPTURE(line);
        const auto expected = verdict(contracts::parse_session_message(line));
        for (int round = 0; round < 30; ++round) {
            // Prefixes as a reader's fills would give them: growing by random steps, sometimes the same
            // again; in some rounds the newline comes before all of it was seen.
            const std::size_t seen = round % 5 == 0 ? line.size() / 2 : line.size();
            for (std::size_t at = 0; at < seen;) {
                at = std::min(seen, at + random() % (round % 3 == 0 ? 5 : 4096));
                parsing.received(std::string_view(line).substr(0, at));
                if (random() % 4 == 0) {
                    parsing.received(std::string_view(line).substr(0, at));
                }
            }
            const auto before = parsing.whole_parses();
            CHECK(verdict(parsing.complete(line)) == expected);
            CHECK(parsing.whole_parses() == before + (streamed ? 0 : 1));
        }
    }
    // An oversize line's start, then dropped: the next line is parsed on its own.
    parsing.received(R"({"type":"run","argv":["from the dropped li)");
    parsing.reset();
    CHECK(verdict(parsing.complete(R"({"type":"cancel"})")) ==
          verdict(contracts::parse_session_message(R"({"type":"cancel"})")));
}

TEST_CASE(
    "the reader's partial line is the next line's start, and empty while a dropped line's rest is read") {
    pipe_pair p;
    line_reader reader(p.fds[0], 8);
    maka_eval::contracts::secret_text line;
    p.write("ok\nab");
    CHECK(reader.fill() == line_reader::fill_result::data);
    CHECK(reader.pop(line) == line_reader::pop_result::line);
    CHECK(reader.pop(line) == line_reader::pop_result::none);
    CHECK(reader.partial_line() == "ab");
    p.write("0123456789");
    CHECK(reader.fill() == line_reader::fill_result::data);
    CHECK(reader.pop(line) == line_reader::pop_result::oversize);
    CHECK(reader.partial_line().empty());
    p.write("rest\ncd");
    CHECK(reader.fill() == line_reader::fill_result::data);
    CHECK(reader.pop(line) == line_reader::pop_result::none);
    CHECK(reader.partial_line() == "cd");
}

} // namespace
