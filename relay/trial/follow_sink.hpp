// `run --follow`: the subject's stdout and stderr on the relay's own stdout and stderr as the helper sends
// them, while everything recorded (artifacts, carrier, `executed`) stays exactly as without it.
//
// The relay's single thread must never wait on a terminal: a stopped pager or a `| slow-reader` would
// otherwise stall the trial, its timers and its cancel. So a terminal or pipe is reopened through
// /proc/self/fd as a new open file description in non-blocking mode (the shell's own description keeps its
// flags) and written asynchronously; a regular file (always writable) is written directly. What waits is
// bounded (1 MiB by default): past it output is dropped and counted, and the phase log says how much, as it
// says what the helper could not send. When the trial ends what is pending gets a short grace to go out.
#pragma once

#include "contracts/session_messages.hpp"
#include "relay/trial/log.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace maka_eval::relay {

class follow_sink {
  public:
    static constexpr std::size_t default_limit_bytes = std::size_t{1024} * 1024;

    // Shows on `out_fd` and `err_fd` (the relay's stdout and stderr by default).
    follow_sink(const boost::asio::any_io_executor& executor, phase_log& log, int out_fd = 1, int err_fd = 2,
                std::size_t limit_bytes = default_limit_bytes);
    follow_sink(const follow_sink&) = delete;
    follow_sink& operator=(const follow_sink&) = delete;
    ~follow_sink();

    void deliver(const contracts::output_message& message);
    // The trial is over: what is pending may still go out within `grace`, the rest is counted as dropped.
    void finish(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

    // Whether what was shown on stdout ends a line (for whoever prints after it); true when nothing was.
    [[nodiscard]] bool stdout_at_line_start() const { return stdout_at_line_start_; }

  private:
    struct output_target {
        int fd = -1;                                                   // as given (a regular file, a socket)
        std::unique_ptr<boost::asio::posix::stream_descriptor> stream; // the non-blocking reopen, if any
    };
    struct chunk {
        std::size_t stream = 0;
        std::string bytes;
    };
    void pump();
    void note_drops();
    void account(std::size_t stream, std::string_view shown);
    void conclude(); // once: the `follow` phase with what was shown and what was not

    phase_log& log_;
    std::array<output_target, 2> targets_;
    std::deque<chunk> pending_;
    std::size_t pending_bytes_ = 0;
    std::size_t limit_;
    bool writing_ = false;
    bool finished_ = false;
    std::array<std::uint64_t, 2> dropped_here_{};     // could not wait here (the reader is slow)
    std::array<std::uint64_t, 2> dropped_upstream_{}; // the helper could not send them
    std::array<bool, 2> noted_{};                     // drops of that stream said in the log
    std::uint64_t shown_ = 0;
    bool stdout_at_line_start_ = true;
    bool concluded_ = false;
    boost::asio::steady_timer grace_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} // namespace maka_eval::relay
