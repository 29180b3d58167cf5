// The attached exec's stream (see exec_stream.hpp): the engine's multiplexed framing decoded, stdin
// half-closed on request, a deadline that closes the connection under a pending read or write.
#include "relay/engine/engine_connection.hpp"
#include "relay/engine/engine_replies.hpp"

#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace maka_eval::relay {
namespace {

using asio::as_tuple;
using asio::use_awaitable;

// The demultiplexed exec stream.
class hijacked_stream final : public exec_stream {
  public:
    hijacked_stream(std::unique_ptr<connection> c, std::string leftover)
        : c_(std::move(c)), raw_(std::move(leftover)) {}
    ~hijacked_stream() override {
        if (!pending_err_.empty()) {
            say(pending_err_); // a last line without its end, from a stream closed before its end
        }
    }
    hijacked_stream(const hijacked_stream&) = delete;
    hijacked_stream& operator=(const hijacked_stream&) = delete;

    asio::awaitable<bool> write(std::string_view data) override {
        auto [ec, n] = co_await c_->visit(
            [&](auto& s) { return asio::async_write(s, asio::buffer(data), as_tuple(use_awaitable)); });
        co_return !ec;
    }

    asio::awaitable<std::optional<std::string>> read_line(std::size_t limit) override {
        while (true) {
            const auto newline = out_.find('\n');
            if (newline != std::string::npos) {
                std::string line = out_.substr(0, newline);
                out_.erase(0, newline + 1);
                co_return line;
            }
            if (out_.size() > limit) {
                co_return std::nullopt;
            }
            // co_await only as a statement of its own: GCC 12 miscompiles it inside conditions.
            const bool more = co_await next_frame();
            if (!more) {
                co_return std::nullopt;
            }
        }
    }

    asio::awaitable<std::optional<std::string>> read_bytes(std::size_t size) override {
        while (out_.size() < size) {
            const bool more = co_await next_frame(); // a statement of its own (GCC 12)
            if (!more) {
                co_return std::nullopt;
            }
        }
        std::string bytes = out_.substr(0, size);
        out_.erase(0, size);
        co_return bytes;
    }

    asio::awaitable<std::string> read_rest(std::size_t limit) override {
        while (out_.size() <= limit) {
            const bool more = co_await next_frame();
            if (!more) {
                break;
            }
        }
        co_return std::move(out_);
    }

    // Over TLS too this shuts down only the socket's sending side, with no close_notify first: that would
    // need an asynchronous write while a read may be pending. The engine (Go's crypto/tls) takes a clean
    // end of the stream at a record boundary as EOF, which is what the exec's stdin then gets.
    void close_stdin() override {
        c_->visit([](auto& s) {
            boost::system::error_code ignored;
            beast::get_lowest_layer(s).shutdown(asio::socket_base::shutdown_send, ignored);
        });
    }

    void close() override { c_->close(); }

    void expire_after(std::optional<std::chrono::milliseconds> timeout) override {
        expired_ = expired_ || (deadline_ && deadline_->fired());
        deadline_.reset();
        if (timeout) {
            deadline_.emplace(*c_, *timeout);
        }
    }
    bool expired() const override { return expired_ || (deadline_ && deadline_->fired()); }

    const std::string& stderr_text() const override { return err_; }

  private:
    // Reads one frame: [stream, 0, 0, 0, size (big-endian u32)] then `size` bytes. A header that is not
    // the engine's format, or announces more than the frame limit, ends the stream with a clear message.
    asio::awaitable<bool> next_frame() {
        const bool header = co_await fill(8);
        if (!header) {
            co_return false;
        }
        const auto parsed = parse_frame_header(std::string_view(raw_).substr(0, 8));
        if (!parsed) {
            const std::string line = "maka-eval-relay: " + parsed.error().message + "\n";
            (void)::write(STDERR_FILENO, line.data(), line.size());
            close();
            co_return false;
        }
        const std::size_t size = parsed->size;
        const unsigned char stream = parsed->stream;
        const bool body = co_await fill(8 + size);
        if (!body) {
            co_return false;
        }
        const std::string_view payload(raw_.data() + 8, size);
        if (stream == 2) {
            // The helper's log: passed on to ours, and a bounded copy kept for one-shot execs.
            pass_on(payload);
            if (err_.size() < 65536) {
                err_.append(payload.substr(0, 65536 - err_.size()));
            }
        } else {
            out_.append(payload);
        }
        raw_.erase(0, 8 + size);
        co_return true;
    }

    // The exec's stderr, line by line, onto ours. The helper's lines say they are its own; anything else
    // there was written before the helper ran — the engine's own error ("Error: runc: exec failed …" from
    // Podman) or the container's shell during the install — and is labelled so, never passed off as the
    // helper's. A line longer than the exec's whole kept stderr goes on in pieces.
    void pass_on(std::string_view payload) {
        pending_err_.append(payload);
        std::size_t start = 0;
        for (auto end = pending_err_.find('\n'); end != std::string::npos;
             end = pending_err_.find('\n', start)) {
            say(std::string_view(pending_err_).substr(start, end - start));
            start = end + 1;
        }
        pending_err_.erase(0, start);
        if (pending_err_.size() >= 65536) {
            say(pending_err_);
            pending_err_.clear();
        }
    }
    void say(std::string_view line) {
        static constexpr std::string_view helper = "maka-eval-helper";
        if (line.ends_with('\r')) {
            line.remove_suffix(1); // runc's messages end in "\r\n"
        }
        std::string out;
        if (!line.starts_with(helper)) {
            out =
                "maka-eval-relay: not from the helper (the engine, or the container before the helper ran): ";
        }
        out.append(line).push_back('\n');
        (void)::write(STDERR_FILENO, out.data(), out.size());
    }

    asio::awaitable<bool> fill(std::size_t need) {
        char chunk[65536];
        while (raw_.size() < need) {
            auto [ec, n] = co_await c_->visit(
                [&](auto& s) { return s.async_read_some(asio::buffer(chunk), as_tuple(use_awaitable)); });
            if (ec) {
                if (!pending_err_.empty()) {
                    say(pending_err_); // the last line, without its end
                    pending_err_.clear();
                }
                co_return false;
            }
            raw_.append(chunk, n);
        }
        co_return true;
    }

    std::unique_ptr<connection> c_;
    std::optional<connection_deadline> deadline_; // destroyed before c_: it points to it
    bool expired_ = false;
    std::string raw_;
    std::string out_;
    std::string err_;
    std::string pending_err_; // the exec's stderr since its last line end
};

} // namespace

std::unique_ptr<exec_stream> make_exec_stream(std::unique_ptr<connection> c, std::string leftover) {
    return std::make_unique<hijacked_stream>(std::move(c), std::move(leftover));
}

} // namespace maka_eval::relay
