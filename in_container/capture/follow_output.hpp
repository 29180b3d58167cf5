// The subject's output, sent to the relay while it runs (`run` with follow: `maka-eval-relay run --follow`).
//
// Following is for a person watching; the artifacts, the carrier and the report are the record. So it must
// never cost the subject anything: a chunk goes out only when the session pipe takes it at once (a
// non-blocking write of its line and raw bytes, only while the pipe's fill level from FIONREAD leaves room
// for it and a reserve for the protocol's own lines, heartbeat and report, written as before);
// otherwise its bytes are dropped and counted, and the next chunk of that stream says how many were lost.
// Nothing is queued here, so memory is flat whatever the subject writes and however slow the reader.
#pragma once

#include "contracts/session_messages.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace maka_eval::in_container {

class follow_output {
  public:
    // `fd`: the session's output (the helper's stdout). Its pipe buffer is grown to 1 MiB where allowed.
    explicit follow_output(int fd);
    follow_output(const follow_output&) = delete;
    follow_output& operator=(const follow_output&) = delete;
    ~follow_output();

    // Sends `bytes` of `stream` in chunks of at most contracts::output_chunk_bytes, or counts what has no
    // room. Never blocks.
    void offer(contracts::output_stream_name stream, std::string_view bytes);
    // Says what was dropped since the last chunk of each stream (a count-only `output`), before the report.
    void finish();

    [[nodiscard]] std::uint64_t dropped_total() const { return dropped_total_; }

  private:
    // Whether `bytes` more fit while the reserve stays free.
    [[nodiscard]] bool has_room(std::size_t bytes) const;
    bool write_line(const std::string& line);
    void send(contracts::output_stream_name stream, std::string_view data);

    int fd_;
    int capacity_ = 0;        // the pipe's buffer size; 0: not a pipe (then a zero-timeout poll decides)
    int nonblocking_fd_ = -1; // the pipe reopened non-blocking; -1: not a pipe
    std::array<std::uint64_t, 2> dropped_{};
    std::uint64_t dropped_total_ = 0;
};

} // namespace maka_eval::in_container
