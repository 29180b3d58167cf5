// Numeric addresses without the resolver (see tcp_endpoints.hpp).
#include "relay/support/tcp_endpoints.hpp"

#include <charconv>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::relay {

namespace asio = boost::asio;
using asio::ip::tcp;

asio::awaitable<boost::system::result<std::vector<tcp::endpoint>>>
tcp_endpoints(asio::any_io_executor executor, std::string host, std::string port) {
    boost::system::error_code not_numeric;
    const auto address = asio::ip::make_address(host, not_numeric);
    unsigned short number = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (!not_numeric && ec == std::errc() && end == port.data() + port.size()) {
        co_return std::vector<tcp::endpoint>{tcp::endpoint(address, number)};
    }
    tcp::resolver resolver(executor);
    auto [failed, results] = co_await resolver.async_resolve(host, port, asio::as_tuple(asio::use_awaitable));
    if (failed) {
        co_return failed;
    }
    std::vector<tcp::endpoint> out;
    for (const auto& entry : results) {
        out.push_back(entry.endpoint());
    }
    co_return out;
}

} // namespace maka_eval::relay
