// The subject's stdin when the relay forwards one (run -i: a pipe; run -t: a pseudo-terminal).
//
// The supervisor's poll loop owns the descriptors; this holds what waits to be written and the rules:
// bytes of `input` are queued and written as the subject's end can take them (never a blocking write: the
// control pipe, the signals and the capture must go on whatever the subject does with its stdin), and what
// went on is counted for `input-taken`, so the relay's window opens again. A subject that closes its stdin
// makes the rest be dropped and counted as taken (as a pipe's reader that went away would). The relay keeps
// at most input_window_bytes unacknowledged, so the queue is bounded by that.
//
// With a terminal the helper keeps the master: the subject gets the slave as stdin, stdout and stderr, its
// own session and the terminal as its controlling one (spawn.cpp: TIOCSCTTY after setsid); what it writes is
// read from the master as its stdout (merged, with the terminal's echo, as `docker exec -t` gives it).
#pragma once

#include "contracts/session_messages.hpp"
#include "policy/user_spec.hpp"
#include "posix/io.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include <boost/system/result.hpp>

namespace maka_eval::in_container {

class subject_input {
  public:
    // What the subject's side is: the descriptor for its stdin (and for a terminal its stdout and stderr
    // too); the supervisor closes it once the subject holds it. A terminal's slave is given to `owner`
    // (the subject's user), as a container runtime gives its console, so that /dev/tty opens for it.
    boost::system::result<posix::unique_fd, std::string>
    open(contracts::subject_input mode, std::uint16_t rows, std::uint16_t cols,
         const std::optional<policy::subject_identity>& owner);

    [[nodiscard]] bool is_terminal() const { return terminal_; }
    // The terminal's master, for the capture to read from through a dup of its own (-1 without a terminal).
    // Non-blocking: a read may find nothing (EAGAIN); EIO once no process holds the slave means its end.
    [[nodiscard]] int master() const { return terminal_ ? fd_.get() : -1; }
    // The descriptor to poll for POLLOUT, -1 when nothing waits to be written.
    [[nodiscard]] int writable_fd() const { return fd_ && !pending_.empty() ? fd_.get() : -1; }

    // An `input` message: its bytes queued (or dropped and counted, when the subject closed its stdin or has
    // none), its EOF noted. Writes at once what the subject can take. Returns the bytes to report taken.
    std::uint64_t add(const contracts::input_message& message);
    // The subject's end may take more: written until it would block. Returns the bytes to report taken.
    std::uint64_t on_writable();
    void resize(std::uint16_t rows, std::uint16_t cols) const;
    // The capture reached the terminal's end: nothing more can be written to it; the master is closed.
    void terminal_closed();

  private:
    std::uint64_t flush();
    std::uint64_t drop_all();

    posix::unique_fd fd_; // the pipe's write end, or the terminal's master
    bool terminal_ = false;
    bool eof_ = false;
    std::string pending_;
    std::size_t offset_ = 0; // of pending_, already written
};

} // namespace maka_eval::in_container
