// A session line parsed while it arrives.
//
// A `run` request carries the subject's environment and credentials: hundreds of KiB to megabytes, which the
// engine hands over in pieces of tens of KiB. Parsed piece by piece as they come, the request is ready when
// its newline is, instead of one whole parse after it: the parse runs under the transfer, not after it.
// Whatever the pieces, the answer is the one parse_session_message gives for the whole line; a line the
// incremental parse refuses is parsed whole again, so that its error is the same precise one too.
#pragma once

#include "contracts/session_messages.hpp"

#include <cstddef>
#include <string_view>

#include <boost/json/stream_parser.hpp>

namespace maka_eval::in_container {

class streamed_message {
  public:
    // The next line as received so far (line_reader::partial_line): each call a longer prefix of the line
    // that complete() is then given. What is new since the last call is parsed now.
    void received(std::string_view so_far);
    // That line, whole (without its newline): its message. Ready for the next line afterwards.
    boost::system::result<contracts::session_message, contracts::failure> complete(std::string_view line);
    // What was received is not part of a line after all (the reader dropped an oversize one).
    void reset() noexcept;
    // Lines parsed whole again because the incremental parse refused them: only bad lines should be (the
    // tests hold a good line of any split to none).
    [[nodiscard]] std::size_t whole_parses() const noexcept { return whole_parses_; }

  private:
    boost::json::stream_parser parser_;
    std::size_t fed_ = 0; // bytes of the line given to the parser
    bool refused_ = false;
    std::size_t whole_parses_ = 0;
};

} // namespace maka_eval::in_container
