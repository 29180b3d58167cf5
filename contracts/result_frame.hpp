// The result frame: how a subject hands its one-line result back through its stdout (the carrier).
//
// `encode` writes `MAKA-EVAL-RESULT-V1 <token> <length> <sha256> <base64url>\n` exactly as the TypeScript
// producer does. `project` turns a carrier into the `stdout` and `diagnostic` of `executed` with the
// original relay's verdict on every input: the 1,500 vectors in
// tests/contracts/vectors/frame-projection.jsonl are the bar. `carrier` accumulates a stream in bounded
// memory (the first 64 KiB + 1 byte of repaired text, a running SHA-256 and size) so the helper can project
// output of any size without holding it.
#pragma once

#include "contracts/diagnostic.hpp"
#include "contracts/digest.hpp"
#include "contracts/limits.hpp"
#include "contracts/utf8.hpp"

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/system/result.hpp>

namespace maka_eval::contracts {

// True for exactly `size` lowercase hex characters (digests, tokens).
[[nodiscard]] bool is_lower_hex(std::string_view text, std::size_t size);

// True for the 32 lowercase hex characters the orchestrator mints and the relay requires.
[[nodiscard]] bool is_result_token(std::string_view token);

enum class frame_error { invalid_token = 1, payload_too_large };
[[nodiscard]] const boost::system::error_category& frame_category() noexcept;
[[nodiscard]] boost::system::error_code make_error_code(frame_error e) noexcept;

// One frame line, ending in "\n".
[[nodiscard]] boost::system::result<std::string> encode_frame(std::string_view token,
                                                              std::string_view payload);

// The carrier as the original sees it: the subject's stdout decoded with U+FFFD replacement and re-encoded.
class carrier {
  public:
    // `raw`: the digest its owner keeps of the same stream as it was written, fed the same chunks right
    // after this carrier is. While the repair changes nothing (valid UTF-8 cut at whole characters: nearly
    // all output) the carrier's digest is that one and its bytes are hashed once; at the first change the
    // carrier copies the state and goes on alone. The owner keeps `raw` alive as long as this carrier.
    void follow(const sha256& raw) noexcept { raw_ = &raw; }
    void feed(std::string_view raw);
    void finish();

    // Repaired bytes seen in all (what the original's `len(carrier.encode())` would be).
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] std::string sha256_hex() const { return digest().hex(); }
    // The digest of the repaired text followed by `more`.
    [[nodiscard]] std::string sha256_hex_after(std::string_view more) const {
        return digest().hex_after(more);
    }
    // The whole repaired text, when it fits within the carrier limit; otherwise its first bytes.
    [[nodiscard]] const std::string& text() const noexcept { return kept_; }
    [[nodiscard]] bool oversize() const noexcept { return size_ > carrier_limit; }

    static constexpr std::uint64_t carrier_limit = carrier_limit_bytes;

  private:
    [[nodiscard]] const sha256& digest() const { return raw_ != nullptr ? *raw_ : digest_; }
    void keep(std::string_view repaired);
    // From here on the repaired text is not the raw stream: the digest so far (the raw one's) goes on here.
    void part();

    utf8_repair repair_;
    sha256 digest_;
    const sha256* raw_ = nullptr; // followed while the repaired text is the raw stream
    std::string kept_;
    std::string scratch_;
    std::uint64_t size_ = 0;
};

struct projection {
    std::string stdout_text; // the decoded payload, valid UTF-8
    contracts::diagnostic diagnostic;
};

// `finished` must have had finish() called. `merged_stderr` (finished too), when given, is what the subject
// wrote to stderr: the frame is still read from stdout alone, but where the original's carrier (Harbor
// merges an exec's stderr into its stdout) would have had noise beside a valid frame, so does this
// diagnostic: `unstructured-output` over stderr followed by stdout's noise (docs/protocol.md).
[[nodiscard]] projection project(const carrier& finished, std::string_view result_token, bool capture_stdout,
                                 const carrier* merged_stderr = nullptr);
// The same over raw bytes held in memory.
[[nodiscard]] projection project(std::string_view raw, std::string_view result_token, bool capture_stdout);

// The one line a wrapper prints when it could not publish the scope file (exit 111 in the original).
[[nodiscard]] std::string scope_error_line(std::string_view result_token);

} // namespace maka_eval::contracts

template <>
struct boost::system::is_error_code_enum<maka_eval::contracts::frame_error> : std::true_type {};
