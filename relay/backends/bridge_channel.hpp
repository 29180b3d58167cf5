// The relay's side of the bridge: requests to the trial runner's adapter over an inherited socket.
//
// The adapter (relay/harbor) owns the trial runner's environment object; the relay asks it to act on it.
// The messages and their wire form are contracts/bridge_messages.hpp. Requests may overlap; replies are
// matched by id. Every call has a deadline; EOF on the socket fails every call in flight at once. The
// adapter's side is relay/harbor/maka_eval_relay/agent.py.
#pragma once

#include "contracts/bridge_messages.hpp"
#include "relay/trial/backend.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/streambuf.hpp>

namespace maka_eval::relay {

using contracts::bridge_exec;

class bridge_channel {
  public:
    // Takes ownership of `fd` (a connected stream socket).
    bridge_channel(const asio::any_io_executor& executor, int fd);
    bridge_channel(const bridge_channel&) = delete;
    bridge_channel& operator=(const bridge_channel&) = delete;
    ~bridge_channel();

    asio::awaitable<boost::system::result<exec_output, relay_error>> exec(bridge_exec request,
                                                                          std::chrono::milliseconds deadline);
    asio::awaitable<boost::system::result<exec_output, relay_error>>
    service_exec(std::string service, std::string command, std::chrono::milliseconds deadline);
    asio::awaitable<boost::system::result<void, relay_error>> upload(std::string source, std::string target,
                                                                     std::chrono::milliseconds deadline);
    asio::awaitable<boost::system::result<void, relay_error>> stop(std::chrono::milliseconds deadline);

    [[nodiscard]] unsigned calls() const { return calls_; }
    // Fails every call in flight with `why` and closes the socket (the adapter sees EOF: the relay is done).
    void abandon(const std::string& why);

  private:
    using reply_slot = asio::experimental::channel<void(boost::system::error_code, contracts::bridge_reply)>;
    asio::awaitable<boost::system::result<contracts::bridge_reply, relay_error>>
    call(contracts::bridge_request request, std::chrono::milliseconds deadline);
    // `call` for the two reply shapes: an exec's output, or a bare acknowledgement.
    asio::awaitable<boost::system::result<exec_output, relay_error>>
    call_exec(contracts::bridge_request request, std::chrono::milliseconds deadline);
    asio::awaitable<boost::system::result<void, relay_error>> call_done(contracts::bridge_request request,
                                                                        std::chrono::milliseconds deadline);
    asio::awaitable<void> read_replies();
    asio::awaitable<void> write_queued();
    void fail_all(const std::string& why);

    asio::any_io_executor executor_;
    asio::local::stream_protocol::socket socket_;
    std::map<std::int64_t, std::shared_ptr<reply_slot>> pending_;
    asio::streambuf read_buffer_; // kept across readers: a reply may arrive behind one that was dropped
    std::deque<std::string> outbox_;
    bool writing_ = false;
    bool reading_ = false;
    std::optional<std::string> broken_; // why the bridge is gone, once it is
    std::int64_t next_id_ = 1;
    unsigned calls_ = 0;
};

} // namespace maka_eval::relay
