// UTF-8 as the original relay sees it.
//
// The framework hands the original the subject's stdout as text decoded with `errors="replace"`; the
// diagnostic's byte count and SHA-256 are taken over that text re-encoded. `utf8_repair` reproduces
// CPython's decoder exactly (one U+FFFD per maximal invalid subpart, one for a truncated tail) and works on
// a stream, so the helper can hash gigabytes without holding them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace maka_eval::contracts {

class utf8_repair {
  public:
    // Appends the repaired form of `in` to `out`. An incomplete sequence at the end is held for the next
    // call.
    void feed(std::string_view in, std::string& out);
    // True when nothing is held from an earlier call: then a valid_utf8_prefix of the next input passes
    // through unchanged.
    [[nodiscard]] bool idle() const noexcept { return need_ == 0; }
    // Flushes a held incomplete sequence as one U+FFFD.
    void finish(std::string& out);

  private:
    void start(unsigned char byte, std::string& out);

    char pending_[4] = {};
    std::uint8_t pending_size_ = 0;
    std::uint8_t need_ = 0;
    unsigned char low_ = 0x80;
    unsigned char high_ = 0xBF;
};

// The length of the longest prefix of `bytes` made of whole, valid sequences: what a repair that holds
// nothing passes through unchanged. ASCII is checked eight bytes at a time (most output is ASCII).
[[nodiscard]] std::size_t valid_utf8_prefix(std::string_view bytes);

// bytes.decode("utf-8", "replace").encode("utf-8") in one call.
[[nodiscard]] std::string repair_utf8(std::string_view bytes);

// True when bytes.decode("utf-8", "strict") would succeed (no overlongs, no surrogates, nothing past
// U+10FFFF).
[[nodiscard]] bool is_valid_utf8(std::string_view bytes);

// `text` whole when it fits in `limit` bytes, else its first bytes cut at a character boundary and
// "… (N bytes cut)" after them: for message texts that may carry what a request or a subject supplied (a
// path, an argv) and must still fit on one short line.
[[nodiscard]] std::string shorten_text(std::string_view text, std::size_t limit);

// Decodes one code point from valid UTF-8 at `pos`, advancing it. Only for input `is_valid_utf8` accepted.
[[nodiscard]] char32_t next_code_point(std::string_view valid, std::size_t& pos);

} // namespace maka_eval::contracts
