// Showing the subject's output live without ever making the relay wait (see follow_sink.hpp).
#include "relay/trial/follow_sink.hpp"

#include "posix/io.hpp"
#include "relay/trial/subject_stdin.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>

namespace maka_eval::relay {
namespace {

constexpr std::array<std::string_view, 2> stream_names = {"stdout", "stderr"};

std::size_t index_of(contracts::output_stream_name stream) {
    return stream == contracts::output_stream_name::stdout_stream ? 0 : 1;
}

} // namespace

follow_sink::follow_sink(const boost::asio::any_io_executor& executor, phase_log& log, int out_fd, int err_fd,
                         std::size_t limit_bytes)
    : log_(log), limit_(limit_bytes), grace_(executor) {
    const std::array<int, 2> fds = {out_fd, err_fd};
    for (std::size_t i = 0; i < fds.size(); ++i) {
        targets_[i].fd = fds[i];
        // A terminal or a pipe can block: it gets a description of its own, non-blocking. Anything else (a
        // regular file, /dev/null, which epoll cannot watch and which never block) is written as it is.
        if (const int own = reopen_nonblocking(fds[i], O_WRONLY); own >= 0) {
            targets_[i].stream = std::make_unique<boost::asio::posix::stream_descriptor>(executor, own);
        }
    }
}

follow_sink::~follow_sink() {
    *alive_ = false;
}

void follow_sink::deliver(const contracts::output_message& message) {
    const auto index = index_of(message.stream);
    dropped_upstream_[index] += message.dropped;
    if (message.data.empty()) {
        if (message.dropped > 0 && pending_.empty()) {
            note_drops();
        }
        return;
    }
    if (finished_ || pending_bytes_ + message.data.size() > limit_) {
        dropped_here_[index] += message.data.size();
        return;
    }
    pending_bytes_ += message.data.size();
    pending_.push_back({index, message.data});
    pump();
}

void follow_sink::pump() {
    while (!writing_ && !pending_.empty()) {
        auto& head = pending_.front();
        auto& target = targets_[head.stream];
        if (!target.stream) {
            if (posix::write_all(target.fd, head.bytes)) {
                account(head.stream, head.bytes);
            } else {
                dropped_here_[head.stream] += head.bytes.size();
            }
            pending_bytes_ -= head.bytes.size();
            pending_.pop_front();
            continue;
        }
        writing_ = true;
        // The deque keeps `head` where it is while later chunks are appended.
        boost::asio::async_write(*target.stream, boost::asio::buffer(head.bytes),
                                 [this, alive = alive_](boost::system::error_code ec, std::size_t wrote) {
                                     if (!*alive) {
                                         return;
                                     }
                                     writing_ = false;
                                     auto& done = pending_.front();
                                     account(done.stream, std::string_view(done.bytes).substr(0, wrote));
                                     if (ec) {
                                         dropped_here_[done.stream] += done.bytes.size() - wrote;
                                     }
                                     pending_bytes_ -= done.bytes.size();
                                     pending_.pop_front();
                                     pump();
                                 });
    }
    if (pending_.empty()) {
        note_drops();
        if (finished_) {
            grace_.cancel();
            conclude();
        }
    }
}

void follow_sink::account(std::size_t stream, std::string_view shown) {
    shown_ += shown.size();
    if (stream == 0 && !shown.empty()) {
        stdout_at_line_start_ = shown.back() == '\n';
    }
}

void follow_sink::conclude() {
    if (concluded_) {
        return;
    }
    concluded_ = true;
    const auto dropped = dropped_here_[0] + dropped_here_[1] + dropped_upstream_[0] + dropped_upstream_[1];
    log_.phase("follow", {{"shownBytes", std::to_string(shown_)}, {"droppedBytes", std::to_string(dropped)}});
}

void follow_sink::note_drops() {
    // Said once per stream, when it first happens; the `follow` phase at the end has the totals.
    for (std::size_t i = 0; i < stream_names.size(); ++i) {
        if (noted_[i] || dropped_here_[i] + dropped_upstream_[i] == 0) {
            continue;
        }
        noted_[i] = true;
        log_.error("follow: some of the subject's " + std::string(stream_names[i]) +
                   " is not shown (the reader cannot keep up); the artifacts have everything");
    }
}

void follow_sink::finish(std::chrono::milliseconds grace) {
    finished_ = true;
    if (pending_.empty()) {
        note_drops();
        conclude();
        return;
    }
    grace_.expires_after(grace);
    grace_.async_wait([this, alive = alive_](boost::system::error_code ec) {
        if (ec || !*alive || pending_.empty()) {
            return;
        }
        // The one being written ends with operation_aborted and counts its own rest.
        for (std::size_t i = writing_ ? 1 : 0; i < pending_.size(); ++i) {
            dropped_here_[pending_[i].stream] += pending_[i].bytes.size();
            pending_bytes_ -= pending_[i].bytes.size();
        }
        pending_.erase(pending_.begin() + (writing_ ? 1 : 0), pending_.end());
        for (auto& target : targets_) {
            if (target.stream) {
                boost::system::error_code ignored;
                target.stream->cancel(ignored);
            }
        }
        note_drops();
        if (!writing_) {
            conclude();
        }
    });
}

} // namespace maka_eval::relay
