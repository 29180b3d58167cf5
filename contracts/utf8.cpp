// CPython-compatible UTF-8 repair and strict validation (see utf8.hpp).
#include "contracts/utf8.hpp"

#include <algorithm>

namespace maka_eval::contracts {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

} // namespace

void utf8_repair::start(unsigned char byte, std::string& out) {
    // Lead bytes and the range their first continuation byte must fall in (Unicode Table 3-7), which is what
    // makes overlongs, surrogates and values past U+10FFFF invalid at the earliest byte, as CPython does.
    low_ = 0x80;
    high_ = 0xBF;
    if (byte < 0x80) {
        out.push_back(static_cast<char>(byte));
        return;
    }
    if (byte >= 0xC2 && byte <= 0xDF) {
        need_ = 1;
    } else if (byte == 0xE0) {
        need_ = 2;
        low_ = 0xA0;
    } else if (byte == 0xED) {
        need_ = 2;
        high_ = 0x9F;
    } else if (byte >= 0xE1 && byte <= 0xEF) {
        need_ = 2;
    } else if (byte == 0xF0) {
        need_ = 3;
        low_ = 0x90;
    } else if (byte >= 0xF1 && byte <= 0xF3) {
        need_ = 3;
    } else if (byte == 0xF4) {
        need_ = 3;
        high_ = 0x8F;
    } else {
        out.append(replacement);
        return;
    }
    pending_[0] = static_cast<char>(byte);
    pending_size_ = 1;
}

void utf8_repair::feed(std::string_view in, std::string& out) {
    for (const char c : in) {
        const auto byte = static_cast<unsigned char>(c);
        if (need_ == 0) {
            start(byte, out);
            continue;
        }
        if (byte >= low_ && byte <= high_) {
            pending_[pending_size_++] = c;
            low_ = 0x80;
            high_ = 0xBF;
            if (--need_ == 0) {
                out.append(pending_, pending_size_);
                pending_size_ = 0;
            }
            continue;
        }
        // The valid prefix so far becomes one replacement; the offending byte starts afresh.
        out.append(replacement);
        need_ = 0;
        pending_size_ = 0;
        start(byte, out);
    }
}

void utf8_repair::finish(std::string& out) {
    if (need_ != 0) {
        out.append(replacement);
    }
    need_ = 0;
    pending_size_ = 0;
}

std::string repair_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    utf8_repair repair;
    repair.feed(bytes, out);
    repair.finish(out);
    return out;
}

bool is_valid_utf8(std::string_view bytes) {
    // ASCII is valid on its own and leaves the decoder as it found it: only what follows the first other
    // byte needs a look. Most lines (and every base64 `output` line) are ASCII throughout.
    const auto first = std::find_if(bytes.begin(), bytes.end(),
                                    [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    bytes.remove_prefix(static_cast<std::size_t>(first - bytes.begin()));
    if (bytes.empty()) {
        return true;
    }
    // Valid input is exactly the input that repair leaves unchanged.
    std::string out;
    out.reserve(bytes.size());
    utf8_repair repair;
    repair.feed(bytes, out);
    repair.finish(out);
    return out == bytes;
}

char32_t next_code_point(std::string_view valid, std::size_t& pos) {
    const auto lead = static_cast<unsigned char>(valid[pos++]);
    if (lead < 0x80) {
        return lead;
    }
    int extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : 1;
    char32_t value = lead & (0x3F >> extra);
    while (extra-- > 0 && pos < valid.size()) {
        value = (value << 6) | (static_cast<unsigned char>(valid[pos++]) & 0x3F);
    }
    return value;
}

std::string shorten_text(std::string_view text, std::size_t limit) {
    if (text.size() <= limit) {
        return std::string(text);
    }
    std::size_t keep = limit;
    // Back over continuation bytes (10xxxxxx) so the cut never splits a character.
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0U) == 0x80U) {
        --keep;
    }
    return std::string(text.substr(0, keep)) + "\u2026 (" + std::to_string(text.size() - keep) +
           " bytes cut)";
}

} // namespace maka_eval::contracts
