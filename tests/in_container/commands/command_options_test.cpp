// The helper's one idiom for its commands' options (command_options.hpp): what it takes, and each way it
// refuses argv (unknown, given twice, a missing value, a number out of bounds), with the rest after `--`.
#include "in_container/commands/command_options.hpp"

#include <array>
#include <string>
#include <string_view>

#include <doctest/doctest.h>

namespace {

using maka_eval::in_container::command_options;

struct parsed {
    bool ok = false;
    std::string scope;
    std::int64_t grace = 7;
    bool flag = false;
    std::span<const std::string_view> rest;
};

template <std::size_t N>
parsed parse(const std::array<std::string_view, N>& argv, bool with_rest = false) {
    parsed p;
    command_options options("test", "usage: test --scope FILE [--grace-ms N] [--flag] [-- REST]");
    options.text("--scope", p.scope).number("--grace-ms", p.grace, 0, 100).flag("--flag", p.flag);
    p.ok = options.parse(argv, with_rest ? &p.rest : nullptr);
    return p;
}

TEST_CASE("command options: values, numbers within bounds, flags, and what follows --") {
    const std::array<std::string_view, 7> argv{"--flag", "--scope", "s", "--grace-ms", "100", "--", "x"};
    const auto p = parse(argv, true);
    CHECK(p.ok);
    CHECK(p.scope == "s");
    CHECK(p.grace == 100);
    CHECK(p.flag);
    REQUIRE(p.rest.size() == 1);
    CHECK(p.rest[0] == "x");
    // Left out: the defaults stay.
    const auto none = parse(std::array<std::string_view, 0>{});
    CHECK(none.ok);
    CHECK(none.grace == 7);
    CHECK_FALSE(none.flag);
}

TEST_CASE("command options: each malformed argv is a usage error") {
    CHECK_FALSE(parse(std::array<std::string_view, 1>{"--bogus"}).ok);
    CHECK_FALSE(parse(std::array<std::string_view, 1>{"--scope"}).ok);                      // no value
    CHECK_FALSE(parse(std::array<std::string_view, 4>{"--scope", "a", "--scope", "b"}).ok); // twice
    CHECK_FALSE(parse(std::array<std::string_view, 2>{"--grace-ms", "101"}).ok);            // above
    CHECK_FALSE(parse(std::array<std::string_view, 2>{"--grace-ms", "-1"}).ok);             // below
    CHECK_FALSE(parse(std::array<std::string_view, 2>{"--grace-ms", "1x"}).ok);             // not a number
    CHECK_FALSE(parse(std::array<std::string_view, 2>{"--", "x"}).ok); // `--` where no rest is taken
}

} // namespace
