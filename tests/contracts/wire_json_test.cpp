// Python-compatible JSON writing and bounded line parsing.
#include "contracts/wire_json.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

TEST_CASE("strings are escaped as json.dumps(ensure_ascii=True) escapes them") {
    CHECK(to_wire(boost::json::string("a\"b\\c/d")) == R"("a\"b\\c/d")");
    CHECK(to_wire(boost::json::string("\b\f\n\r\t")) == R"("\b\f\n\r\t")");
    CHECK(to_wire(boost::json::string(std::string("\x00\x1f\x7f", 3))) == R"("\u0000\u001f\u007f")");
    CHECK(to_wire(boost::json::string("\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80")) ==
          R"("\u00e9\u2028\ud83d\ude00")");
}

TEST_CASE("objects keep key order and are compact") {
    const boost::json::object o{
        {"z", 1}, {"a", boost::json::array{true, nullptr, -3}}, {"m", boost::json::object{}}};
    CHECK(to_wire(o) == R"({"z":1,"a":[true,null,-3],"m":{}})");
}

TEST_CASE("line parsing bounds, checks and reports each failure") {
    CHECK(parse_object("{\"a\":1}\n", 100).has_value());
    CHECK(parse_object("{\"a\":1}\r\n", 100).has_value());
    CHECK(parse_object(std::string(101, ' '), 100).error() == line_error::too_long);
    CHECK(parse_object("{\"a\":\"\xff\"}", 100).error() == line_error::not_utf8);
    CHECK(parse_object("{\"a\":", 100).error() == line_error::malformed_json);
    CHECK(parse_object("{} {}", 100).error() == line_error::malformed_json);
    CHECK(parse_object("[1]", 100).error() == line_error::not_an_object);
    CHECK(parse_object("", 100).error() == line_error::malformed_json);
}

TEST_CASE("duplicate keys keep the last value, as Python's json does") {
    const auto o = parse_object(R"({"a":"1","b":"2","a":"3"})", 100).value();
    CHECK(o.at("a").as_string() == "3");
}

} // namespace
