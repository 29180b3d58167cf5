// Proxy host and published IPv4 validation with the original's samples (C22, C25).
#include "policy/proxy_host.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::policy;

TEST_CASE("C22: invalid proxy host names") {
    for (const char* bad : {".*", "proxy*", "evil.com\n127.0.0.1 pwned", "foo bar", "foo..bar", ".hidden",
                            "maka-\xc3\xa9v\xc3\xa1l", "", "trailing."}) {
        CAPTURE(bad);
        CHECK_FALSE(is_valid_proxy_host(bad));
    }
    for (const char* good : {"maka-eval-mitmproxy", "proxy.internal", "-leading", "trailing-", "A1"}) {
        CHECK(is_valid_proxy_host(good));
    }
}

TEST_CASE("C25: the published IPv4 must be four 0-255 octets without leading zeros") {
    for (const char* good : {"172.18.0.2", "0.1.2.3", "255.255.255.255", "10.0.0.1"}) {
        CHECK(is_valid_ipv4(good));
    }
    for (const char* bad : {"999.1.1.1", "1.2.3", "1..2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.08", "...", "",
                            "172.18.0.2/32", "localhost", "256.1.1.1", "1.2.3.4."}) {
        CAPTURE(bad);
        CHECK_FALSE(is_valid_ipv4(bad));
    }
}

TEST_CASE("the published file is read as tr -d ' \\t\\r\\n' reads it") {
    CHECK(published_ipv4("172.18.0.2\n") == "172.18.0.2");
    CHECK(published_ipv4(" 172.18.0.2\r\n") == "172.18.0.2");
    CHECK(published_ipv4("172.18. 0.2") == "172.18.0.2");
    CHECK_FALSE(published_ipv4(""));
    CHECK_FALSE(published_ipv4("\n"));
    CHECK_FALSE(published_ipv4("172.18.0.2\n10.0.0.1\n"));
}

} // namespace
