// A session line parsed while it arrives (see streamed_message.hpp).
#include "in_container/base/streamed_message.hpp"

#include <optional>

namespace maka_eval::in_container {

void streamed_message::received(std::string_view so_far) {
    if (refused_ || so_far.size() <= fed_) {
        return;
    }
    boost::system::error_code ec;
    parser_.write(so_far.data() + fed_, so_far.size() - fed_, ec);
    fed_ = so_far.size();
    refused_ = static_cast<bool>(ec);
}

boost::system::result<contracts::session_message, contracts::failure>
streamed_message::complete(std::string_view line) {
    std::optional<boost::json::value> value;
    if (!refused_ && fed_ <= line.size() && line.size() <= contracts::session_line_limit_bytes) {
        boost::system::error_code ec;
        parser_.write(line.data() + fed_, line.size() - fed_, ec);
        if (!ec) {
            parser_.finish(ec);
        }
        if (!ec) {
            value = parser_.release();
        }
    }
    reset();
    if (!value || !value->is_object()) {
        // The whole line's own verdict, word for word (not UTF-8, malformed, not an object...).
        ++whole_parses_;
        return contracts::parse_session_message(line);
    }
    return contracts::from_json(value->get_object());
}

void streamed_message::reset() noexcept {
    parser_.reset();
    fed_ = 0;
    refused_ = false;
}

} // namespace maka_eval::in_container
