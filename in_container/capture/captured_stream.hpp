// One of the subject's output streams as the supervisor captures it: read from its pipe, counted and hashed
// whole (the report's size and SHA-256), masked of secrets, and kept in its artifact file up to the
// artifact limit (the receipt's size and SHA-256 describe what is on disk). The last bytes kept are held
// for the report's stderr tail. Memory is flat whatever the subject writes.
//
// The supervisor's poll loop reads the pipe and hands each chunk here; after the subject is settled, a
// drainer (background_drainer.hpp) may go on feeding the same object in a child process.
#pragma once

#include "contracts/digest.hpp"
#include "contracts/limits.hpp"
#include "contracts/receipt.hpp"
#include "contracts/secret_mask.hpp"
#include "contracts/session_messages.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace maka_eval::in_container {

struct captured_stream {
    int fd = -1;              // our read end of the subject's pipe; -1 once closed
    int artifact = -1;        // the artifact file
    std::string path;         // where it is published (for messages)
    std::string name;         // its name in the artifacts directory (for the receipt)
    contracts::sha256 digest; // of everything the subject wrote (the report's)
    contracts::sha256
        file_digest;           // of what went to disk, masked (the receipt's), once it parted from `digest`
    std::uint64_t bytes = 0;   // everything the subject wrote
    std::uint64_t written = 0; // what went to disk: at most the artifact limit
    std::uint64_t limit = contracts::default_artifact_limit_bytes;
    bool artifact_failed = false;
    int write_error = 0;                            // errno of the write the disk refused
    bool cut = false;                               // a byte was dropped at the limit (said once in the log)
    std::optional<contracts::secret_masker> masker; // nullopt: nothing to mask
    std::string masked;                             // the masker's output for the current chunk
    std::string tail;                               // the last bytes kept (up to twice stderr_tail_bytes)

    captured_stream() = default;
    captured_stream(const captured_stream&) = delete;
    captured_stream& operator=(const captured_stream&) = delete;
    ~captured_stream();

    // What the subject wrote, counted and hashed; then masked and kept. `shown` is what was kept (for the
    // live output). False only when the file cannot be written (errno in write_error).
    bool take(std::string_view chunk, std::string_view& shown);
    // The masked bytes kept (what `take` does after counting); for the drainer, which does not count.
    bool pass(std::string_view chunk, std::string_view& shown);
    // The pipe ended: what the masker held back is kept.
    bool finish(std::string_view& shown);
    // Closes our end of the pipe.
    void close_pipe();

    [[nodiscard]] contracts::artifact_summary summary() const;
    // Makes the file durable; a refusal marks it incomplete (write_error). False when the disk refused.
    bool sync();
    // The receipt's entry as things stand; `drained` says a drainer still writes to it.
    [[nodiscard]] contracts::artifact_receipt receipt_entry(bool drained) const;
    // The last `stderr_tail_bytes` kept, as valid UTF-8.
    [[nodiscard]] std::string tail_text() const;

  private:
    bool shown_and_kept(std::string_view chunk, std::string_view& shown);
    bool keep(std::string_view chunk);
    // What goes to disk stops being what was written (masked, cut, refused): the file's digest goes on alone.
    void part_file_digest();

    // While what is on disk is exactly what the subject wrote (nothing to mask, under the limit: the usual
    // case), the receipt's digest is the report's and each byte is hashed once.
    bool file_follows_ = true;
};

} // namespace maka_eval::in_container
