// Where a TCP peer named by host and port is: a numeric address as it is, a name through the resolver.
//
// Asio resolves names on a background thread (getaddrinfo blocks); a numeric address — the orchestrator
// on 127.0.0.1, an engine at tcp://10.0.0.5:2376 — needs none of that, so the relay keeps to its one
// thread and saves the resolver's start on every trial.
#pragma once

#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::relay {

[[nodiscard]] boost::asio::awaitable<boost::system::result<std::vector<boost::asio::ip::tcp::endpoint>>>
tcp_endpoints(boost::asio::any_io_executor executor, std::string host, std::string port);

} // namespace maka_eval::relay
