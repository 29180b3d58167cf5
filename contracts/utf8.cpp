// CPython-compatible UTF-8 repair and strict validation (see utf8.hpp).
#include "contracts/utf8.hpp"

#include <algorithm>
#include <cstring>

namespace maka_eval::contracts {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

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
        // The ranges of Unicode Table 3-7 (as in utf8_repair::start).
        std::size_t need = 0;
        unsigned char low = 0x80;
        unsigned char high = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) {
            need = 1;
        } else if (lead == 0xE0) {
            need = 2;
            low = 0xA0;
        } else if (lead == 0xED) {
            need = 2;
            high = 0x9F;
        } else if (lead >= 0xE1 && lead <= 0xEF) {
            need = 2;
        } else if (lead == 0xF0) {
            need = 3;
            low = 0x90;
        } else if (lead >= 0xF1 && lead <= 0xF3) {
            need = 3;
        } else if (lead == 0xF4) {
            need = 3;
            high = 0x8F;
        } else {
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
