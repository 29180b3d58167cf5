// CPython-compatible UTF-8 repair and strict validation (see utf8.hpp).
#include "contracts/utf8.hpp"

#include <algorithm>
#include <cstring>

namespace maka_eval::contracts {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

// A lead byte's sequence (Unicode Table 3-7): how many continuation bytes follow, and the range the first
// of them must fall in, which is what makes overlongs, surrogates and values past U+10FFFF invalid at the
// earliest byte, as CPython does. `need` 0: not a lead byte (ASCII is handled before).
struct sequence {
    std::uint8_t need = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
};

constexpr sequence sequence_of(unsigned char lead) {
    if (lead >= 0xC2 && lead <= 0xDF) {
        return {1, 0x80, 0xBF};
    }
    if (lead == 0xE0) {
        return {2, 0xA0, 0xBF};
    }
    if (lead == 0xED) {
        return {2, 0x80, 0x9F};
    }
    if (lead >= 0xE1 && lead <= 0xEF) {
        return {2, 0x80, 0xBF};
    }
    if (lead == 0xF0) {
        return {3, 0x90, 0xBF};
    }
    if (lead >= 0xF1 && lead <= 0xF3) {
        return {3, 0x80, 0xBF};
    }
    if (lead == 0xF4) {
        return {3, 0x80, 0x8F};
    }
    return {};
}

} // namespace

std::size_t valid_utf8_prefix(std::string_view bytes) {
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t size = bytes.size();
    std::size_t at = 0;
    while (at < size) {
        // Eight ASCII bytes at once: none has its top bit set.
        while (at + 8 <= size) {
            std::uint64_t word = 0;
            std::memcpy(&word, data + at, sizeof word);
            if ((word & 0x8080808080808080ULL) != 0) {
                break;
            }
            at += 8;
        }
        if (at >= size) {
            break;
        }
        const unsigned char lead = data[at];
        if (lead < 0x80) {
            ++at;
            continue;
        }
        const auto [need, low, high] = sequence_of(lead);
        if (need == 0) {
            return at;
        }
        if (at + need >= size) {
            return at; // incomplete at the end
        }
        if (data[at + 1] < low || data[at + 1] > high) {
            return at;
        }
        for (std::size_t k = 2; k <= need; ++k) {
            if (data[at + k] < 0x80 || data[at + k] > 0xBF) {
                return at;
            }
        }
        at += need + 1;
    }
    return size;
}

void utf8_repair::start(unsigned char byte, std::string& out) {
    // Lead bytes and the range their first continuation byte must fall in (Unicode Table 3-7), which is what
    // makes overlongs, surrogates and values past U+10FFFF invalid at the earliest byte, as CPython does.
    low_ = 0x80;
    high_ = 0xBF;
    if (byte < 0x80) {
        out.push_back(static_cast<char>(byte));
        return;
    }
    const auto next = sequence_of(byte);
    if (next.need == 0) {
        out.append(replacement);
        return;
    }
    need_ = next.need;
    low_ = next.low;
    high_ = next.high;
    pending_[0] = static_cast<char>(byte);
    pending_size_ = 1;
}

void utf8_repair::feed(std::string_view in, std::string& out) {
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (need_ == 0) {
            // Whole valid sequences pass through in one append; the byte that ends them starts afresh.
            const std::size_t valid = valid_utf8_prefix(in.substr(i));
            out.append(in, i, valid);
            i += valid;
            if (i == in.size()) {
                break;
            }
            start(static_cast<unsigned char>(in[i]), out);
            continue;
        }
        const char c = in[i];
        const auto byte = static_cast<unsigned char>(c);
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
    // Valid input is exactly the input that repair leaves unchanged and holds nothing of.
    return valid_utf8_prefix(bytes) == bytes.size();
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
