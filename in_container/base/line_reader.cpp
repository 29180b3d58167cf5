// Bounded line reading (see line_reader.hpp).
#include "in_container/base/line_reader.hpp"

#include "contracts/secret.hpp"
#include "posix/io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace maka_eval::in_container {

line_reader::fill_result line_reader::fill() {
    // Read straight into the buffer's tail: a `run` request of megabytes is copied once, not twice.
    auto& buffer = buffer_.text();
    if (buffer.capacity() - buffer.size() < read_chunk) {
        // Grown by hand so that the storage left behind is wiped, not freed with a request's secrets in it.
        std::string grown;
        grown.reserve(std::max(2 * buffer.capacity(), buffer.size() + read_chunk));
        grown.append(buffer);
        contracts::wipe(buffer);
        buffer.swap(grown);
    }
    const std::size_t before = buffer.size();
    buffer.resize(before + read_chunk);
    const ssize_t got = posix::read_retry(fd_, buffer.data() + before, read_chunk);
    buffer.resize(before + static_cast<std::size_t>(std::max<ssize_t>(got, 0)));
    if (got < 0) {
        return errno == EAGAIN ? fill_result::data : fill_result::error;
    }
    if (got == 0) {
        eof_ = true;
        return fill_result::eof;
    }
    return fill_result::data;
}

line_reader::pop_result line_reader::pop(contracts::secret_text& into) {
    auto& buffer = buffer_.text();
    auto& line = into.text();
    auto newline = buffer.find('\n', std::min(scanned_, buffer.size()));
    scanned_ = 0; // unless nothing is taken below
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
            contracts::wipe(buffer); // what `line` held before
            return pop_result::line;
        }
        scanned_ = buffer.size(); // the next look starts where this one ended
        return pop_result::none;
    }
    if (newline > limit_) {
        std::memset(buffer.data(), 0, newline + 1);
        buffer.erase(0, newline + 1);
        return pop_result::oversize;
    }
    if (newline + 1 == buffer.size()) {
        // The whole buffer is the line (a `run` request of any size usually is): handed over, not copied.
        buffer.pop_back();
        line.swap(buffer);
        contracts::wipe(buffer); // what `line` held before
        return pop_result::line;
    }
    line.assign(buffer, 0, newline);
    // The consumed bytes may be a secret-bearing request: overwrite before they are moved out of reach.
    std::memset(buffer.data(), 0, newline + 1);
    buffer.erase(0, newline + 1);
    return pop_result::line;
}

std::size_t line_reader::take(std::size_t most, std::string& into) {
    auto& buffer = buffer_.text();
    if (discarding_) {
        return 0;
    }
    const std::size_t n = std::min(most, buffer.size());
    into.append(buffer, 0, n);
    std::memset(buffer.data(), 0, n); // the same rule as for lines: nothing left behind in what is moved
    buffer.erase(0, n);
    scanned_ = 0;
    return n;
}

} // namespace maka_eval::in_container
