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
    buffer_.text().append(chunk, static_cast<std::size_t>(got));
    return fill_result::data;
}

line_reader::pop_result line_reader::pop(contracts::secret_text& into) {
    auto& buffer = buffer_.text();
    auto& line = into.text();
    auto newline = buffer.find('\n');
    if (discarding_) {
        // The rest of a line already reported as oversize.
        if (newline == std::string::npos) {
            contracts::wipe(buffer);
            return pop_result::none;
        }
        buffer.erase(0, newline + 1);
        discarding_ = false;
        newline = buffer.find('\n');
    }
    if (newline == std::string::npos) {
        if (buffer.size() > limit_) {
            wipe();
            discarding_ = !eof_;
            return pop_result::oversize;
        }
        if (eof_ && !buffer.empty()) {
            line.swap(buffer);
            buffer.clear();
            return pop_result::line;
        }
        return pop_result::none;
    }
    if (newline > limit_) {
        std::memset(buffer.data(), 0, newline + 1);
        buffer.erase(0, newline + 1);
        return pop_result::oversize;
    }
    line.assign(buffer, 0, newline);
    // The consumed bytes may be a secret-bearing request: overwrite before they are moved out of reach.
    std::memset(buffer.data(), 0, newline + 1);
    buffer.erase(0, newline + 1);
    return pop_result::line;
}

} // namespace maka_eval::in_container
