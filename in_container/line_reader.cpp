// Bounded line reading (see line_reader.hpp).
#include "in_container/line_reader.hpp"

#include "contracts/secret.hpp"
#include "posix/io.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace maka_eval::in_container {

line_reader::fill_result line_reader::fill() {
    char chunk[65536];
    const ssize_t got = posix::read_retry(fd_, chunk, sizeof chunk);
    if (got < 0) {
        return errno == EAGAIN ? fill_result::data : fill_result::error;
    }
    if (got == 0) {
        eof_ = true;
        return fill_result::eof;
    }
    buffer_.append(chunk, static_cast<std::size_t>(got));
    return fill_result::data;
}

line_reader::pop_result line_reader::pop(std::string& line) {
    auto newline = buffer_.find('\n');
    if (discarding_) {
        // The rest of a line already reported as oversize.
        if (newline == std::string::npos) {
            buffer_.clear();
            return pop_result::none;
        }
        buffer_.erase(0, newline + 1);
        discarding_ = false;
        newline = buffer_.find('\n');
    }
    if (newline == std::string::npos) {
        if (buffer_.size() > limit_) {
            wipe();
            discarding_ = !eof_;
            return pop_result::oversize;
        }
        if (eof_ && !buffer_.empty()) {
            line.swap(buffer_);
            buffer_.clear();
            return pop_result::line;
        }
        return pop_result::none;
    }
    if (newline > limit_) {
        std::memset(buffer_.data(), 0, newline + 1);
        buffer_.erase(0, newline + 1);
        return pop_result::oversize;
    }
    line.assign(buffer_, 0, newline);
    // The consumed bytes may be a secret-bearing request: overwrite before they are moved out of reach.
    std::memset(buffer_.data(), 0, newline + 1);
    buffer_.erase(0, newline + 1);
    return pop_result::line;
}

void line_reader::wipe() noexcept {
    contracts::wipe(buffer_);
}

} // namespace maka_eval::in_container
