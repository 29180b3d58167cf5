// Following the subject's output without making it wait (see follow_output.hpp).
#include "in_container/capture/follow_output.hpp"

#include "in_container/base/io.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/ioctl.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

// Bytes kept free in the session pipe for the protocol's own lines (a report is a few hundred bytes, a
// heartbeat a few dozen), which are written to the blocking descriptor as always.
constexpr std::size_t reserve_bytes = std::size_t{64} << 10U;
constexpr int wanted_pipe_bytes = 1024 * 1024;

std::size_t index_of(contracts::output_stream_name stream) {
    return stream == contracts::output_stream_name::stdout_stream ? 0 : 1;
}

} // namespace

follow_output::follow_output(int fd) : fd_(fd) {
    // A bigger pipe absorbs bursts the relay will read a moment later; refused (a non-root helper above
    // fs.pipe-max-size, not a pipe) it stays as it is.
    (void)::fcntl(fd_, F_SETPIPE_SZ, wanted_pipe_bytes);
    capacity_ = std::max(0, ::fcntl(fd_, F_GETPIPE_SZ));
    // The same pipe through an open file description of our own, non-blocking, so that the protocol's
    // blocking writes on `fd` are untouched. A write of at most PIPE_BUF bytes to it is all or nothing.
    if (capacity_ > 0) {
        nonblocking_fd_ = open_retry("/proc/self/fd/" + std::to_string(fd_), O_WRONLY | O_NONBLOCK);
    }
}

follow_output::~follow_output() {
    if (nonblocking_fd_ >= 0) {
        ::close(nonblocking_fd_);
    }
}

bool follow_output::has_room(std::size_t bytes) const {
    if (nonblocking_fd_ >= 0) {
        int queued = 0;
        return ::ioctl(fd_, FIONREAD, &queued) == 0 &&
               static_cast<std::size_t>(queued) + reserve_bytes + bytes < static_cast<std::size_t>(capacity_);
    }
    pollfd out{fd_, POLLOUT, 0};
    return ::poll(&out, 1, 0) == 1 && (out.revents & POLLOUT) != 0;
}

bool follow_output::write_line(const std::string& line) {
    if (nonblocking_fd_ < 0) {
        return write_all(fd_, line);
    }
    ssize_t wrote = 0;
    do {
        wrote = ::write(nonblocking_fd_, line.data(), line.size());
    } while (wrote < 0 && errno == EINTR);
    if (wrote < 0) {
        return false; // EAGAIN: the pages are full even though the bytes were not; nothing was written
    }
    // Room for the whole message was seen first, so it is not partial but where the pipe's pages are
    // fuller than its bytes; should it be, the message is completed so the stream stays whole.
    return static_cast<std::size_t>(wrote) == line.size() ||
           write_all(fd_, std::string_view(line).substr(static_cast<std::size_t>(wrote)));
}

void follow_output::send(contracts::output_stream_name stream, std::string_view data) {
    auto& dropped = dropped_[index_of(stream)];
    // Asked before the line is built: when the reader lags, most chunks are dropped, and encoding them first
    // would only take time from reading the subject's pipes.
    if (!has_room(data.size() + 96) ||
        !write_line(contracts::serialize(contracts::output_message{stream, std::string(data), dropped}))) {
        dropped += data.size();
        dropped_total_ += data.size();
        return;
    }
    dropped = 0;
}

void follow_output::offer(contracts::output_stream_name stream, std::string_view bytes) {
    while (!bytes.empty()) {
        const auto piece = bytes.substr(0, contracts::output_chunk_bytes);
        bytes.remove_prefix(piece.size());
        send(stream, piece);
    }
}

void follow_output::finish() {
    for (const auto stream :
         {contracts::output_stream_name::stdout_stream, contracts::output_stream_name::stderr_stream}) {
        const auto dropped = dropped_[index_of(stream)];
        if (dropped > 0 &&
            write_all(fd_, contracts::serialize(contracts::output_message{stream, {}, dropped}))) {
            dropped_[index_of(stream)] = 0;
        }
    }
}

} // namespace maka_eval::in_container
