// The subject's forwarded stdin: a pipe or a pseudo-terminal, written without blocking (subject_input.hpp).
#include "in_container/capture/subject_input.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

namespace maka_eval::in_container {

boost::system::result<posix::unique_fd, std::string>
subject_input::open(contracts::subject_input mode, std::uint16_t rows, std::uint16_t cols,
                    const std::optional<policy::subject_identity>& owner) {
    auto failed = [](const char* what) { return std::string(what) + ": " + std::strerror(errno); };
    if (mode == contracts::subject_input::pipe) {
        auto ends = posix::make_pipe();
        if (!ends) {
            return failed("the subject's stdin pipe");
        }
        (void)::fcntl(ends.write.get(), F_SETFL, O_WRONLY | O_NONBLOCK);
        // As big as the relay's window may be (where the system allows it; 64 KiB stays otherwise): a
        // forwarded stream then goes on in a few large writes while the subject reads, not one per 64 KiB.
        (void)::fcntl(ends.write.get(), F_SETPIPE_SZ, static_cast<int>(contracts::input_window_bytes));
        fd_ = std::move(ends.write);
        return std::move(ends.read);
    }
    if (mode != contracts::subject_input::tty) {
        return posix::unique_fd();
    }
    posix::unique_fd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
    char name[128] = {};
    if (!master || ::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0 ||
        ::ptsname_r(master.get(), name, sizeof name) != 0) {
        return failed("a pseudo-terminal for the subject (/dev/ptmx, /dev/pts)");
    }
    posix::unique_fd slave(posix::open_retry(name, O_RDWR | O_NOCTTY));
    if (!slave) {
        return failed(name);
    }
    if (owner && ::fchown(slave.get(), owner->uid, static_cast<gid_t>(-1)) != 0) {
        return failed(name);
    }
    terminal_ = true;
    fd_ = std::move(master);
    resize(rows, cols);
    return slave;
}

void subject_input::resize(std::uint16_t rows, std::uint16_t cols) const {
    if (!terminal_ || !fd_ || rows == 0 || cols == 0) {
        return;
    }
    winsize size{};
    size.ws_row = rows;
    size.ws_col = cols;
    (void)::ioctl(fd_.get(), TIOCSWINSZ, &size);
}

std::uint64_t subject_input::add(const contracts::input_message& message) {
    eof_ = eof_ || message.eof;
    if (!fd_) {
        return message.data.size(); // nothing to write to: taken, so the relay's window stays open
    }
    pending_.append(message.data);
    return flush(); // which closes a pipe once its EOF came and everything before it went
}

std::uint64_t subject_input::on_writable() {
    return flush();
}

void subject_input::terminal_closed() {
    if (terminal_) {
        (void)drop_all();
        fd_ = posix::unique_fd();
    }
}

std::uint64_t subject_input::flush() {
    std::uint64_t taken = 0;
    while (fd_ && offset_ < pending_.size()) {
        const ssize_t wrote = ::write(fd_.get(), pending_.data() + offset_, pending_.size() - offset_);
        if (wrote > 0) {
            offset_ += static_cast<std::size_t>(wrote);
            taken += static_cast<std::uint64_t>(wrote);
            continue;
        }
        if (wrote < 0 && errno == EINTR) {
            continue;
        }
        if (wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return taken; // poll says when it may take more
        }
        // EPIPE: nobody reads the subject's stdin any more; EIO: its terminal is gone. The rest is dropped.
        if (!terminal_) {
            fd_ = posix::unique_fd();
        }
        return taken + drop_all();
    }
    pending_.clear();
    offset_ = 0;
    if (eof_ && fd_ && !terminal_) {
        fd_ = posix::unique_fd(); // the subject reads EOF
    }
    return taken;
}

std::uint64_t subject_input::drop_all() {
    const auto dropped = static_cast<std::uint64_t>(pending_.size() - offset_);
    pending_.clear();
    offset_ = 0;
    return dropped;
}

} // namespace maka_eval::in_container
