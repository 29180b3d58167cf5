// Numeric addresses are taken as they are; names go through the resolver; a bad name says so.
#include "relay/support/tcp_endpoints.hpp"

#include <optional>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

namespace {

using maka_eval::relay::tcp_endpoints;
using endpoints = boost::system::result<std::vector<boost::asio::ip::tcp::endpoint>>;

endpoints look_up(const std::string& host, const std::string& port) {
    boost::asio::io_context context;
    std::optional<endpoints> out;
    boost::asio::co_spawn(context, tcp_endpoints(context.get_executor(), host, port),
                          [&](const std::exception_ptr& error, endpoints found) {
                              REQUIRE_FALSE(error);
                              out = std::move(found);
                          });
    context.run();
    REQUIRE(out);
    return *out;
}

TEST_CASE("tcp_endpoints: numeric addresses as they are, names resolved, unknown names refused") {
    const auto v4 = look_up("127.0.0.1", "2375");
    REQUIRE(v4.has_value());
    REQUIRE(v4->size() == 1);
    CHECK(v4->front().address().to_string() == "127.0.0.1");
    CHECK(v4->front().port() == 2375);
    const auto v6 = look_up("::1", "8080");
    REQUIRE(v6.has_value());
    CHECK(v6->front().address().is_v6());
    const auto named = look_up("localhost", "2376");
    REQUIRE(named.has_value());
    REQUIRE_FALSE(named->empty());
    CHECK(named->front().address().is_loopback());
    CHECK_FALSE(look_up("no-such-host.invalid", "2375").has_value());
}

} // namespace
