// The /etc/hosts rewrite with the original's C23 samples.
#include "policy/hosts_file.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::policy;

TEST_CASE("C23: lines naming the host as an alias are dropped, everything else kept") {
    const std::string before = "127.0.0.1 localhost\n"
                               "10.0.0.1 maka-eval-mitmproxy\n"
                               "10.0.0.2 prefix-maka-eval-mitmproxy\n"
                               "10.0.0.3 other.example\n"
                               "10.0.0.4 alias maka-eval-mitmproxy\n"
                               "# 10.0.0.9 maka-eval-mitmproxy\n";
    CHECK(rewrite_hosts(before, "maka-eval-mitmproxy", "172.18.0.2") ==
          "127.0.0.1 localhost\n"
          "10.0.0.2 prefix-maka-eval-mitmproxy\n"
          "10.0.0.3 other.example\n"
          "# 10.0.0.9 maka-eval-mitmproxy\n"
          "172.18.0.2 maka-eval-mitmproxy\n");
}

TEST_CASE("awk's field and record rules") {
    // Tabs separate fields; the first field (the address) never matches; a missing final newline is added.
    CHECK(rewrite_hosts("10.0.0.1\tx\tmaka-eval-mitmproxy\nmaka-eval-mitmproxy 1.1.1.1",
                        "maka-eval-mitmproxy",
                        "1.2.3.4") == "maka-eval-mitmproxy 1.1.1.1\n1.2.3.4 maka-eval-mitmproxy\n");
    // Blank lines stay; a CR stays part of the field, so it does not match.
    CHECK(rewrite_hosts("\n10.0.0.1 h\r\n", "h", "1.2.3.4") == "\n10.0.0.1 h\r\n1.2.3.4 h\n");
    CHECK(rewrite_hosts("", "h", "1.2.3.4") == "1.2.3.4 h\n");
    // Running twice gives one pin, not two.
    const auto once = rewrite_hosts("127.0.0.1 localhost\n", "h", "1.2.3.4");
    CHECK(rewrite_hosts(once, "h", "1.2.3.4") == once);
}

} // namespace
