// The relay's stdin as the subject's (subject_stdin.hpp).
#include "relay/trial/subject_stdin.hpp"

#include "posix/io.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::relay {

int reopen_nonblocking(int fd, int access) {
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !(S_ISFIFO(info.st_mode) || ::isatty(fd) == 1)) {
        return -1;
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    return posix::open_retry(path, access | O_NONBLOCK | O_NOCTTY);
}

subject_stdin::subject_stdin(const boost::asio::any_io_executor& executor, int fd) : fd_(fd) {
    if (const int own = reopen_nonblocking(fd, O_RDONLY); own >= 0) {
        stream_ = std::make_unique<boost::asio::posix::stream_descriptor>(executor, own);
    }
}

boost::asio::awaitable<std::optional<std::string>> subject_stdin::read(std::size_t limit) {
    std::string chunk(limit, '\0');
    if (stream_) {
        auto [ec, got] = co_await stream_->async_read_some(boost::asio::buffer(chunk),
                                                           boost::asio::as_tuple(boost::asio::use_awaitable));
        if (ec || got == 0) {
            co_return std::nullopt;
        }
        chunk.resize(got);
        co_return chunk;
    }
    // A regular file (or what cannot be reopened): always readable, read directly; the turn is given back
    // between chunks so that the trial's other events are taken meanwhile.
    // `fd` is copied first: the trial may end (and destroy this reader) while the turn is away.
    const int fd = fd_;
    co_await boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::use_awaitable);
    const ssize_t got = posix::read_retry(fd, chunk.data(), chunk.size());
    if (got <= 0) {
        co_return std::nullopt;
    }
    chunk.resize(static_cast<std::size_t>(got));
    co_return chunk;
}

std::optional<std::pair<std::uint16_t, std::uint16_t>> window_size(int fd) {
    winsize size{};
    if (fd < 0 || ::ioctl(fd, TIOCGWINSZ, &size) != 0) {
        return std::nullopt;
    }
    return std::pair{size.ws_row, size.ws_col};
}

std::string escape_watch::pass(std::string_view typed) {
    std::string out;
    out.reserve(typed.size());
    for (const char c : typed) {
        if (escaped()) {
            break; // what follows the escape is not the subject's
        }
        if (c == terminal_escape_byte) {
            ++seen_;
            continue;
        }
        out.append(static_cast<std::size_t>(seen_), terminal_escape_byte); // broken off: typed after all
        seen_ = 0;
        out.push_back(c);
    }
    return out;
}

} // namespace maka_eval::relay
