// Capability evidence from /proc/<pid>/status.
#include "policy/capabilities.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::policy;

TEST_CASE("every Cap line of a status text is read, in order") {
    const auto fields =
        parse_status("Name:\tsh\nCapInh:\t0000000000000000\nCapPrm:\t00000000a80425fb\n"
                     "CapEff:\t00000000a80425fb\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n"
                     "NoNewPrivs:\t0\n");
    REQUIRE(fields.size() == 5);
    CHECK(fields[0] == std::pair<std::string, std::string>{"CapInh", "0000000000000000"});
    CHECK(fields[3] == std::pair<std::string, std::string>{"CapBnd", "000001ffffffffff"});
}

TEST_CASE("hex values are read as int(x, 16) reads them") {
    CHECK(parse_hex("00000000a80425fb") == 0xa80425fbU);
    CHECK(parse_hex("0xFF") == 0xFFU);
    CHECK(parse_hex("0x_f") == 0xFU);
    CHECK(parse_hex("f_f") == 0xFFU);
    CHECK(parse_hex(" 1 ") == 1U);
    for (const char* bad : {"", "g", "0x", "_1", "1_", "1__2", "-1"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_hex(bad));
    }
}

TEST_CASE("bypass capabilities are named sorted") {
    CHECK(bypass_capabilities(0).empty());
    CHECK(bypass_capabilities(cap_net_raw) == std::vector<std::string>{"NET_RAW"});
    CHECK(bypass_capabilities(cap_net_raw | cap_net_admin) ==
          std::vector<std::string>{"NET_ADMIN", "NET_RAW"});
}

} // namespace
