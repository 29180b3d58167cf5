// CPython-compatible splitlines, int() and strict base64 (see python_text.hpp).
#include "contracts/python_text.hpp"

#include "contracts/utf8.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include <openssl/evp.h>

namespace maka_eval::contracts::python {
namespace {

// First code point of every Unicode 14 run of decimal digits 0-9 (unicodedata.decimal, Python 3.11).
constexpr std::array<char32_t, 66> decimal_zeros = {
    0x30,    0x660,   0x6f0,   0x7c0,   0x966,   0x9e6,   0xa66,   0xae6,   0xb66,   0xbe6,   0xc66,
    0xce6,   0xd66,   0xde6,   0xe50,   0xed0,   0xf20,   0x1040,  0x1090,  0x17e0,  0x1810,  0x1946,
    0x19d0,  0x1a80,  0x1a90,  0x1b50,  0x1bb0,  0x1c40,  0x1c50,  0xa620,  0xa8d0,  0xa900,  0xa9d0,
    0xa9f0,  0xaa50,  0xabf0,  0xff10,  0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0,
    0x11450, 0x114d0, 0x11650, 0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60,
    0x16ac0, 0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0};

constexpr std::size_t max_str_digits = 4300;

int decimal_value(char32_t c) {
    const auto* it = std::upper_bound(decimal_zeros.begin(), decimal_zeros.end(), c);
    if (it == decimal_zeros.begin()) {
        return -1;
    }
    const char32_t zero = *(it - 1);
    return c - zero < 10 ? static_cast<int>(c - zero) : -1;
}

// int() maps every non-ASCII Unicode space to ' ' and then skips the C locale's ASCII spaces; \x1c-\x1f
// are str.isspace() but not skipped, because only non-ASCII characters are mapped.
bool is_int_space(char32_t c) {
    if (c < 0x80) {
        return c == ' ' || (c >= '\t' && c <= '\r');
    }
    switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
        return true;
    default:
        return c >= 0x2000 && c <= 0x200A;
    }
}

int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '+' || c == '-') {
        return 62;
    }
    if (c == '/' || c == '_') {
        return 63;
    }
    return -1;
}

} // namespace

std::vector<std::string_view> splitlines(std::string_view text) {
    std::vector<std::string_view> lines;
    std::size_t begin = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t separator = 0;
        if (c == '\r') {
            separator = (i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
        } else if (c == '\n' || c == '\v' || c == '\f' || c == 0x1C || c == 0x1D || c == 0x1E) {
            separator = 1;
        } else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85) {
            separator = 2;
        } else if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                   (static_cast<unsigned char>(text[i + 2]) == 0xA8 ||
                    static_cast<unsigned char>(text[i + 2]) == 0xA9)) {
            separator = 3;
        }
        if (separator == 0) {
            ++i;
            continue;
        }
        i += separator;
        lines.push_back(text.substr(begin, i - begin));
        begin = i;
    }
    if (begin < text.size()) {
        lines.push_back(text.substr(begin));
    }
    return lines;
}

std::optional<std::int64_t> parse_int(std::string_view text) {
    std::vector<char32_t> chars;
    for (std::size_t pos = 0; pos < text.size();) {
        chars.push_back(next_code_point(text, pos));
    }
    std::size_t i = 0;
    std::size_t end = chars.size();
    while (i < end && is_int_space(chars[i])) {
        ++i;
    }
    while (end > i && is_int_space(chars[end - 1])) {
        --end;
    }
    bool negative = false;
    if (i < end && (chars[i] == '+' || chars[i] == '-')) {
        negative = chars[i] == '-';
        ++i;
    }
    constexpr std::int64_t saturated = std::numeric_limits<std::int64_t>::max() / 10 - 10;
    std::int64_t value = 0;
    std::size_t digits = 0;
    bool after_underscore = false;
    for (; i < end; ++i) {
        if (chars[i] == '_') {
            // An underscore only separates two digits.
            if (digits == 0 || after_underscore) {
                return std::nullopt;
            }
            after_underscore = true;
            continue;
        }
        const int digit = decimal_value(chars[i]);
        if (digit < 0) {
            return std::nullopt;
        }
        after_underscore = false;
        ++digits;
        value = value >= saturated ? saturated : value * 10 + digit;
    }
    if (digits == 0 || after_underscore || digits > max_str_digits) {
        return std::nullopt;
    }
    return negative ? -value : value;
}

std::optional<std::string> b64decode_standard(std::string_view text) {
    if (text.size() % 4 != 0) {
        return std::nullopt;
    }
    const std::size_t padding = text.ends_with("==") ? 2 : text.ends_with('=') ? 1 : 0;
    const auto is_alphabet = [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
               c == '/';
    };
    if (!std::all_of(text.begin(), text.end() - static_cast<std::ptrdiff_t>(padding), is_alphabet)) {
        return std::nullopt;
    }
    std::string out(text.size() / 4 * 3, '\0');
    const int size =
        EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                        reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
    if (size < 0) {
        return std::nullopt;
    }
    // EVP_DecodeBlock counts the padding as zero bytes.
    out.resize(static_cast<std::size_t>(size) - padding);
    return out;
}

std::optional<std::string> b64decode_strict(std::string_view text) {
    // CPython 3.11 binascii.a2b_base64(strict_mode=True), after altchars "-_" were mapped onto "+/": no
    // padding first, none in the middle of data, nothing after a completed pad, whole quads only. Padding
    // that follows a completed quad is tolerated, as CPython tolerates it.
    std::string data;
    data.reserve(text.size());
    std::size_t quad = 0;
    std::size_t pads = 0;
    bool padding_started = false;
    bool done = false;
    for (std::size_t i = 0; i < text.size() && !done; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '=') {
            if (i == 0) {
                return std::nullopt;
            }
            padding_started = true;
            if (quad >= 2 && quad + ++pads >= 4) {
                if (i + 1 < text.size()) {
                    return std::nullopt;
                }
                done = true;
            }
            continue;
        }
        const int value = b64_value(c);
        if (value < 0 || padding_started) {
            return std::nullopt;
        }
        pads = 0;
        data.push_back(c == '-' ? '+' : c == '_' ? '/' : static_cast<char>(c));
        quad = (quad + 1) % 4;
    }
    if (quad != 0 && !done) {
        return std::nullopt;
    }
    // OpenSSL decodes whole quads; give it the data re-padded and drop the pad's zero bytes afterwards.
    const std::size_t remainder = data.size() % 4;
    const std::size_t pad_bytes = remainder == 0 ? 0 : 4 - remainder;
    data.append(pad_bytes, '=');
    std::string out(data.size() / 4 * 3, '\0');
    if (!data.empty()) {
        const int size = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                         reinterpret_cast<const unsigned char*>(data.data()),
                                         static_cast<int>(data.size()));
        if (size < 0) {
            return std::nullopt;
        }
    }
    out.resize(out.size() - pad_bytes);
    return out;
}

std::string b64encode(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
    const int size =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                        reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(size));
    return out;
}

std::string b64encode_url_unpadded(std::string_view bytes) {
    std::string out = b64encode(bytes);
    while (!out.empty() && out.back() == '=') {
        out.pop_back();
    }
    std::replace(out.begin(), out.end(), '+', '-');
    std::replace(out.begin(), out.end(), '/', '_');
    return out;
}

} // namespace maka_eval::contracts::python
