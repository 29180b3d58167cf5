// The bridge's request/reply channel (see bridge_channel.hpp).
#include "relay/backends/bridge_channel.hpp"

#include "contracts/bridge_messages.hpp"
#include "relay/support/relay_clock.hpp"
#include "relay/trial/log.hpp"

#include <fcntl.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace maka_eval::relay {
namespace {

using asio::as_tuple;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

// A reply carries at most the adapter's capped stdout and stderr (4 MiB each) in JSON.
constexpr std::size_t reply_line_limit = std::size_t{20} * 1024 * 1024;

boost::system::result<exec_output, relay_error> exec_output_of(const contracts::bridge_reply& reply) {
    if (!reply.return_code) {
        return relay_error{relay_errc::bridge, "the adapter's reply has no returnCode"};
    }
    return exec_output{static_cast<int>(*reply.return_code), reply.stdout_text, reply.stderr_text};
}

} // namespace

bridge_channel::bridge_channel(const asio::any_io_executor& executor, int fd)
    : executor_(executor), socket_(executor), read_buffer_(reply_line_limit) {
    (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
    boost::system::error_code ec;
    socket_.assign(asio::local::stream_protocol(), fd, ec);
    if (ec) {
        broken_ = "the bridge socket (fd " + std::to_string(fd) + ") is unusable: " + ec.message();
    }
}

bridge_channel::~bridge_channel() {
    boost::system::error_code ignored;
    socket_.close(ignored);
}

asio::awaitable<boost::system::result<contracts::bridge_reply, relay_error>>
bridge_channel::call(contracts::bridge_request request, std::chrono::milliseconds deadline) {
    if (broken_) {
        co_return relay_error{relay_errc::bridge, *broken_};
    }
    const std::int64_t id = next_id_++;
    ++calls_;
    auto slot = std::make_shared<reply_slot>(executor_, 1);
    pending_.emplace(id, slot);
    outbox_.push_back(contracts::serialize_bridge_request(id, request));
    // The writer and the reader belong to this channel (which outlives the io_context's run: the backend
    // owns it); one that fails breaks the bridge, which fails every call in flight with the reason.
    if (!writing_) {
        writing_ = true;
        asio::co_spawn(executor_, write_queued(), [this](const std::exception_ptr& error) {
            if (error) {
                writing_ = false;
                fail_all("the bridge writer failed: " + exception_text(error));
            }
        });
    }
    // Replies are read only while a call waits for one: with nothing pending, nothing keeps the relay alive.
    if (!reading_) {
        reading_ = true;
        asio::co_spawn(executor_, read_replies(), [this](const std::exception_ptr& error) {
            if (error) {
                reading_ = false;
                fail_all("the bridge reader failed: " + exception_text(error));
            }
        });
    }
    relay_timer timer(executor_, deadline);
    auto first =
        co_await (slot->async_receive(as_tuple(use_awaitable)) || timer.async_wait(as_tuple(use_awaitable)));
    pending_.erase(id);
    if (pending_.empty() && reading_ && !writing_) {
        // Nothing is waiting for a reply any more: an outstanding read must not keep the relay alive.
        boost::system::error_code ignored;
        socket_.cancel(ignored);
    }
    if (first.index() == 1) {
        co_return relay_error{relay_errc::bridge, "the trial runner's environment did not answer " +
                                                      std::string(contracts::op_name(request)) + " within " +
                                                      std::to_string(deadline.count() / 1000) + " s"};
    }
    auto [ec, reply] = std::get<0>(std::move(first));
    if (ec) {
        co_return relay_error{relay_errc::bridge, broken_.value_or("the bridge closed")};
    }
    if (!reply.ok) {
        co_return relay_error{relay_errc::bridge,
                              reply.error.empty() ? "the adapter refused the request" : reply.error};
    }
    co_return reply;
}

asio::awaitable<void> bridge_channel::write_queued() {
    while (!outbox_.empty() && !broken_) {
        std::string line = std::move(outbox_.front());
        outbox_.pop_front();
        auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(line), as_tuple(use_awaitable));
        if (ec) {
            fail_all("the bridge to the adapter failed: " + ec.message());
        }
    }
    outbox_.clear();
    writing_ = false; // here, not in the completion handler: a call queued after this line starts a writer
}

asio::awaitable<void> bridge_channel::read_replies() {
    auto& buffer = read_buffer_;
    std::string line;
    while (!pending_.empty() && !broken_) {
        auto [ec, n] = co_await asio::async_read_until(socket_, buffer, '\n', as_tuple(use_awaitable));
        if (ec == asio::error::operation_aborted) {
            continue; // cancelled when the last call gave up waiting: read on only if another one waits now
        }
        if (ec) {
            fail_all(ec == asio::error::eof ? std::string("the adapter closed the bridge")
                     : ec == asio::error::not_found
                         ? "a reply from the adapter exceeds " + std::to_string(reply_line_limit) + " bytes"
                         : "the bridge to the adapter failed: " + ec.message());
            break;
        }
        line.assign(asio::buffers_begin(buffer.data()),
                    asio::buffers_begin(buffer.data()) + static_cast<std::ptrdiff_t>(n - 1));
        buffer.consume(n);
        auto reply = contracts::parse_bridge_reply(line, reply_line_limit);
        if (!reply) {
            fail_all(reply.error().message);
            break;
        }
        const auto found = pending_.find(reply->id);
        if (found != pending_.end()) {
            auto slot = found->second;
            pending_.erase(found);
            slot->try_send(boost::system::error_code{}, std::move(*reply));
        }
        // A reply to a call that timed out is dropped.
    }
    reading_ = false;
}

void bridge_channel::abandon(const std::string& why) {
    fail_all(why);
    boost::system::error_code ignored;
    socket_.close(ignored); // ends the reader and writer at once
}

void bridge_channel::fail_all(const std::string& why) {
    if (!broken_) {
        broken_ = why;
    }
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, slot] : pending) {
        slot->try_send(asio::error::broken_pipe, contracts::bridge_reply{});
    }
}

asio::awaitable<boost::system::result<exec_output, relay_error>>
bridge_channel::call_exec(contracts::bridge_request request, std::chrono::milliseconds deadline) {
    auto reply = co_await call(std::move(request), deadline);
    if (!reply) {
        co_return reply.error();
    }
    co_return exec_output_of(*reply);
}

asio::awaitable<boost::system::result<void, relay_error>>
bridge_channel::call_done(contracts::bridge_request request, std::chrono::milliseconds deadline) {
    auto reply = co_await call(std::move(request), deadline);
    if (!reply) {
        co_return reply.error();
    }
    co_return boost::system::result<void, relay_error>{};
}

// Each request is a named variable before the co_await: GCC 12 destroys a temporary built inside a
// co_await's operands twice (a double free seen in the bridge tests).
asio::awaitable<boost::system::result<exec_output, relay_error>>
bridge_channel::exec(bridge_exec request, std::chrono::milliseconds deadline) {
    contracts::bridge_request wire = std::move(request);
    co_return co_await call_exec(std::move(wire), deadline);
}

asio::awaitable<boost::system::result<exec_output, relay_error>>
bridge_channel::service_exec(std::string service, std::string command, std::chrono::milliseconds deadline) {
    contracts::bridge_request wire = contracts::bridge_service_exec{std::move(service), std::move(command)};
    co_return co_await call_exec(std::move(wire), deadline);
}

asio::awaitable<boost::system::result<void, relay_error>>
bridge_channel::upload(std::string source, std::string target, std::chrono::milliseconds deadline) {
    contracts::bridge_request wire = contracts::bridge_upload{std::move(source), std::move(target)};
    co_return co_await call_done(std::move(wire), deadline);
}

asio::awaitable<boost::system::result<void, relay_error>>
bridge_channel::stop(std::chrono::milliseconds deadline) {
    contracts::bridge_request wire = contracts::bridge_stop{};
    co_return co_await call_done(std::move(wire), deadline);
}

} // namespace maka_eval::relay
