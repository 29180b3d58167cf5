// A bounded NDJSON line reader over a file descriptor, for the helper's control pipe.
//
// A line longer than the bound is discarded up to its newline and reported once as oversize, so one bad
// message costs a clear error, not the session. Bytes are never held beyond the bound plus one read.
#pragma once

#include "contracts/secret.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace maka_eval::in_container {

class line_reader {
  public:
    line_reader(int fd, std::size_t limit) : fd_(fd), limit_(limit) {}

    enum class fill_result { data, eof, error };
    // One read(2) (EINTR retried). Call when poll says the fd is readable.
    fill_result fill();

    enum class pop_result { none, line, oversize };
    // The next complete line (without its "\n") into `line`. At EOF a final unterminated line is returned
    // too.
    pop_result pop(contracts::secret_text& line);

    // Up to `most` raw bytes that follow the last popped line (an `input`'s payload), appended to `into`;
    // what is buffered so far, which may be fewer. Returns how many.
    std::size_t take(std::size_t most, std::string& into);

    // The start of the next line, as received so far, once pop() has returned none: every line before it
    // has been popped, so the buffer holds this one alone (empty while a dropped line's rest is read).
    [[nodiscard]] std::string_view partial_line() const noexcept {
        return discarding_ ? std::string_view() : buffer_.view();
    }
    [[nodiscard]] bool at_eof() const noexcept { return eof_; }
    [[nodiscard]] int fd() const noexcept { return fd_; }
    // Overwrites what is buffered (it may hold secrets of a `run` request); its destruction does too.
    void wipe() noexcept {
        buffer_.clear();
        scanned_ = 0;
    }

  private:
    // A read takes up to this much; the buffer grows by doubling, the old storage wiped as it goes.
    static constexpr std::size_t read_chunk = std::size_t{256} << 10U;

    int fd_;
    std::size_t limit_;
    contracts::secret_text buffer_;
    std::size_t scanned_ = 0; // the buffer's first bytes, known to hold no newline
    bool discarding_ = false;
    bool eof_ = false;
};

} // namespace maka_eval::in_container
