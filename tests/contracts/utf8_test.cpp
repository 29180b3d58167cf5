// Python-compatible UTF-8 repair and validation.
#include "contracts/utf8.hpp"
#include "support/result_printing.hpp"

#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

const std::string r = "\xef\xbf\xbd"; // U+FFFD

TEST_CASE("repair matches CPython's decode(errors='replace') on each kind of damage") {
    CHECK(repair_utf8("plain ascii") == "plain ascii");
    CHECK(repair_utf8("caf\xc3\xa9") == "caf\xc3\xa9");
    CHECK(repair_utf8("\xff") == r);
    CHECK(repair_utf8("\x80\x80") == r + r);
    // A truncated sequence is one replacement, then the next byte starts afresh.
    CHECK(repair_utf8("\xe2\x82"
                      "A") == r + "A");
    CHECK(repair_utf8("\xe2\x82") == r);
    CHECK(repair_utf8("\xf0\x9f\x98") == r);
    // Overlongs and surrogates fail at the second byte: every byte is its own replacement.
    CHECK(repair_utf8("\xc0\xaf") == r + r);
    CHECK(repair_utf8("\xe0\x80\xaf") == r + r + r);
    CHECK(repair_utf8("\xed\xa0\x80") == r + r + r);
    CHECK(repair_utf8("\xf4\x90\x80\x80") == r + r + r + r);
    CHECK(repair_utf8("\xf0\x9f\x98\x80") == "\xf0\x9f\x98\x80");
}

TEST_CASE("repair works across arbitrary chunk boundaries") {
    const std::string input = "a\xf0\x9f\x98\x80"
                              "b\xe2\x82"
                              "c\xff\xc3";
    const std::string whole = repair_utf8(input);
    for (std::size_t split = 0; split <= input.size(); ++split) {
        utf8_repair repair;
        std::string out;
        repair.feed(std::string_view(input).substr(0, split), out);
        repair.feed(std::string_view(input).substr(split), out);
        repair.finish(out);
        CHECK(out == whole);
    }
}

TEST_CASE("strict validation") {
    CHECK(is_valid_utf8(""));
    CHECK(is_valid_utf8("\xe2\x80\xa8"));
    CHECK_FALSE(is_valid_utf8("\xff"));
    CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));
    CHECK_FALSE(is_valid_utf8("\xc3"));
}

TEST_CASE("code points decode from valid UTF-8") {
    const std::string text = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    std::size_t pos = 0;
    CHECK(next_code_point(text, pos) == U'a');
    CHECK(next_code_point(text, pos) == U'\u00e9');
    CHECK(next_code_point(text, pos) == U'\u20ac');
    CHECK(next_code_point(text, pos) == U'\U0001F600');
    CHECK(pos == text.size());
}

TEST_CASE("shorten_text keeps what fits and cuts the rest at a character boundary, saying how much") {
    CHECK(shorten_text("short", 5) == "short");
    CHECK(shorten_text("abcdef", 3) == "abc\xe2\x80\xa6 (3 bytes cut)");
    // "é" is two bytes: a cut after its first byte backs up to before it, never splitting it.
    const std::string cut = shorten_text("a\xc3\xa9z", 2);
    CHECK(cut == "a\xe2\x80\xa6 (3 bytes cut)");
    CHECK(is_valid_utf8(cut));
    const std::string long_text(100000, 'x');
    CHECK(shorten_text(long_text, 4096).size() < 4200);
}

} // namespace
