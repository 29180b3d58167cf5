// The relay's own stdin, forwarded to the subject (run -i, -t): read as it arrives, without ever blocking
// the relay's one thread, and watched for the terminal's escape.
//
// A terminal or pipe is reopened through /proc/self/fd as a non-blocking description of our own (the
// shell's keeps its flags) and read asynchronously; a regular file, which is always readable and cannot be
// polled, is read directly a chunk at a time. The trial asks for the next chunk only while the helper has
// room for it (contracts::input_window_bytes), so a subject that never reads its stdin costs a bounded
// amount and the control channel is never behind it.
//
// The escape (run -t): Ctrl-] three times in a row cancels the trial through the normal settle path, as
// `docker attach`'s detach keys leave an attached terminal. Bytes of a sequence that is broken off are
// forwarded as typed; the escape's own bytes never are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace maka_eval::relay {

inline constexpr char terminal_escape_byte = 0x1d; // Ctrl-]
inline constexpr int terminal_escape_count = 3;

class subject_stdin {
  public:
    subject_stdin(const boost::asio::any_io_executor& executor, int fd);
    // The next bytes (at most `limit`); nullopt at EOF or on a read error (the subject then reads EOF).
    boost::asio::awaitable<std::optional<std::string>> read(std::size_t limit);

  private:
    int fd_;
    std::unique_ptr<boost::asio::posix::stream_descriptor> stream_; // the non-blocking reopen, if any
};

// Finds the escape in a terminal's keystrokes, across reads.
class escape_watch {
  public:
    // What of `typed` goes on to the subject; `escaped()` turns true once the sequence is complete.
    std::string pass(std::string_view typed);
    [[nodiscard]] bool escaped() const { return seen_ >= terminal_escape_count; }

  private:
    int seen_ = 0; // escape bytes in a row, held back
};

// A terminal's or pipe's descriptor reopened through /proc/self/fd as a new open file description with
// `access` (O_RDONLY, O_WRONLY) and O_NONBLOCK; -1 for anything else (a regular file, a socket).
[[nodiscard]] int reopen_nonblocking(int fd, int access);

// A terminal's window size (rows, columns); nullopt for -1 or what is not a terminal.
[[nodiscard]] std::optional<std::pair<std::uint16_t, std::uint16_t>> window_size(int fd);

} // namespace maka_eval::relay
