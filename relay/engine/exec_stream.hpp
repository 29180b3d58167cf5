// An attached exec as the relay uses it: a line-oriented stdout, a stdin that can be half-closed (the
// helper's dead-man switch), the exec's stderr kept for one-shot execs, a deadline for waits that must not
// outlast the engine's answer. docker_api opens one (exec_stream.cpp decodes the engine's framing).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

namespace maka_eval::relay {

namespace asio = boost::asio;

// One attached exec: write to its stdin, read its stdout line by line, stderr goes to `on_stderr`.
class exec_stream {
  public:
    virtual ~exec_stream() = default;
    // `data` is the caller's until the write ends (and the caller's to wipe when it is a secret).
    virtual asio::awaitable<bool> write(std::string_view data) = 0;
    // The next stdout line without "\n" (at most `limit` bytes); nullopt at the end of the stream.
    virtual asio::awaitable<std::optional<std::string>> read_line(std::size_t limit) = 0;
    // The next `size` bytes of stdout, whatever they are; nullopt when the stream ends first.
    virtual asio::awaitable<std::optional<std::string>> read_bytes(std::size_t size) = 0;
    // Everything left on stdout until the stream ends, at most `limit` bytes.
    virtual asio::awaitable<std::string> read_rest(std::size_t limit) = 0;
    virtual void close_stdin() = 0; // half-close: the process sees EOF on stdin
    virtual void close() = 0;
    // Once `timeout` has passed from now, the stream is closed whatever it is doing (a pending read or write
    // then ends); nullopt lifts the deadline. For the waits that must not outlast the engine's answer.
    virtual void expire_after(std::optional<std::chrono::milliseconds> timeout) = 0;
    // Whether the stream ended because its deadline passed.
    [[nodiscard]] virtual bool expired() const = 0;
    [[nodiscard]] virtual const std::string& stderr_text() const = 0; // kept for one-shot execs (bounded)
};

} // namespace maka_eval::relay
