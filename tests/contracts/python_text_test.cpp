// splitlines, int() and strict base64 with CPython 3.11's exact acceptance.
#include "contracts/python_text.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts::python;

TEST_CASE("splitlines keeps ends and knows every separator") {
    const auto lines = splitlines("a\nb\r\nc\rd\x0b"
                                  "e\xc2\x85"
                                  "f\xe2\x80\xa9g");
    REQUIRE(lines.size() == 7);
    CHECK(lines[0] == "a\n");
    CHECK(lines[1] == "b\r\n");
    CHECK(lines[2] == "c\r");
    CHECK(lines[3] == "d\x0b");
    CHECK(lines[4] == "e\xc2\x85");
    CHECK(lines[5] == "f\xe2\x80\xa9");
    CHECK(lines[6] == "g");
    CHECK(splitlines("").empty());
    CHECK(splitlines("\n").size() == 1);
    // U+2027 is not a separator, and neither is \x1f.
    CHECK(splitlines("a\xe2\x80\xa7"
                     "b\x1f"
                     "c")
              .size() == 1);
}

TEST_CASE("int() as CPython reads a base-10 string") {
    CHECK(parse_int("7") == 7);
    CHECK(parse_int("+7") == 7);
    CHECK(parse_int("-0") == 0);
    CHECK(parse_int("-12") == -12);
    CHECK(parse_int("0_7") == 7);
    CHECK(parse_int("1_0_0") == 100);
    CHECK(parse_int(" 7\t") == 7);
    CHECK(parse_int("\xc2\xa0"
                    "7") == 7);                 // NO-BREAK SPACE
    CHECK(parse_int("\xd9\xa3\xd9\xa3") == 33); // ARABIC-INDIC THREE THREE
    CHECK(parse_int("\xf0\x9d\x9f\x97") == 9);  // MATHEMATICAL BOLD DIGIT NINE (U+1D7D7)
    CHECK(parse_int("99999999999999999999999") > 2048);
    for (const char* bad : {"", "+", "7_", "_7", "1__0", "0x7",
                            "\x1f"
                            "7",
                            "7 7", "+-1", "1.0",
                            "\xef\xbc\x8b"
                            "7"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_int(bad));
    }
    CHECK(parse_int(std::string(4300, '1')).has_value());
    CHECK_FALSE(parse_int(std::string(4301, '1')).has_value());
}

TEST_CASE("strict base64 as CPython 3.11's b64decode(validate=True) with altchars -_") {
    CHECK(b64decode_strict("QQ==") == "A");
    CHECK(b64decode_strict("QR==") == "A"); // non-canonical trailing bits are accepted
    CHECK(b64decode_strict("QUJD") == "ABC");
    CHECK(b64decode_strict("QUJD====") == "ABC"); // padding after a whole quad is tolerated
    CHECK(b64decode_strict("-_8=") == "\xfb\xff");
    CHECK(b64decode_strict("+/8=") == "\xfb\xff");
    CHECK(b64decode_strict("") == "");
    for (const char* bad : {"Q===", "=QQ=", "QQ==QQ==", "QQ=A", "Q=Q=", "====", "QQ======", "QU J", "QQ\n"}) {
        CAPTURE(bad);
        CHECK_FALSE(b64decode_strict(bad));
    }
}

TEST_CASE("url-safe unpadded encoding") {
    CHECK(b64encode_url_unpadded("") == "");
    CHECK(b64encode_url_unpadded("A") == "QQ");
    CHECK(b64encode_url_unpadded("\xfb\xff") == "-_8");
}

TEST_CASE("standard base64 round-trips every length and byte, and anything else is refused") {
    std::string bytes;
    for (int n = 0; n < 70; ++n) {
        CHECK(b64decode_standard(b64encode(bytes)) == bytes);
        bytes.push_back(static_cast<char>((n * 37) & 0xFF));
    }
    CHECK(b64encode(std::string("\x00\xff", 2)) == "AP8=");
    for (const char* bad :
         {"A", "AP8", "AP=8", "A===", "AP8-", "AP8_", " AP8=", "AP8=\n", "====", "AP8=AP8="}) {
        CAPTURE(bad);
        CHECK_FALSE(b64decode_standard(bad));
    }
}

} // namespace
