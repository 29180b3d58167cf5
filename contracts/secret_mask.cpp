// The streaming secret masker (see secret_mask.hpp).
#include "contracts/secret_mask.hpp"

#include "contracts/python_text.hpp"
#include "contracts/secret.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace maka_eval::contracts {
namespace {

// RFC 3986's unreserved bytes, which percent-encoding leaves as they are, by value: a look-up, not a chain
// of comparisons, since this runs over every byte of every credential (three times) before the subject's
// output can be read.
constexpr std::array<bool, 256> unreserved_bytes = [] {
    std::array<bool, 256> table{};
    for (unsigned c = 0; c < 256; ++c) {
        table[c] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                   c == '.' || c == '_' || c == '~';
    }
    return table;
}();

bool unreserved(unsigned char c) {
    return unreserved_bytes[c];
}

std::string percent_encoded(std::string_view value, const char* digits) {
    // Written through a pointer into place (through the string's operator[] the compiler reloads its data
    // pointer at every byte: the writes may alias it), and without a branch: three bytes are written for
    // every byte and the pointer moves on by one or three. A credential's bytes are as good as random, and
    // a branch on them mispredicts often. The last write stays inside: each byte still to come has three.
    std::string out(value.size() * 3, '\0');
    char* at = out.data();
    for (const char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        const bool kept = unreserved_bytes[c];
        at[0] = kept ? ch : '%';
        at[1] = digits[c >> 4U];
        at[2] = digits[c & 0xFU];
        at += kept ? 1 : 3;
    }
    // The last byte's two digits may lie past the end: cleared, since wipe() clears the size, not the rest.
    const auto used = static_cast<std::size_t>(at - out.data());
    std::memset(at, 0, std::min<std::size_t>(2, out.size() - used));
    out.resize(used);
    return out;
}

} // namespace

std::vector<std::string> secret_forms(std::string_view value) {
    std::vector<std::string> out;
    // Base64 of the value after k other bytes: the characters whose six bits all come from the value.
    std::string shifted(2, '\0');
    shifted.append(value);
    for (std::size_t k = 0; k < 3; ++k) {
        std::string encoded = python::b64encode(std::string_view(shifted).substr(2 - k));
        const std::size_t first = (8 * k + 5) / 6;
        const std::size_t last = 8 * (k + value.size()) / 6; // one past
        if (last > first) {
            encoded.resize(last);
            encoded.erase(0, first);
            out.push_back(std::move(encoded));
        }
    }
    wipe(shifted);
    for (const char* digits : {"0123456789ABCDEF", "0123456789abcdef"}) {
        if (auto encoded = percent_encoded(value, digits); encoded != value) {
            out.push_back(std::move(encoded));
        }
    }
    return out;
}

// The forms, kept once and sorted, found by their first `window` bytes.
struct secret_masker::patterns {
    static constexpr std::size_t max_window = 8;

    std::string text;                                           // every form's bytes, one after another
    std::vector<std::pair<std::uint32_t, std::uint32_t>> forms; // [offset, length) in text, sorted, unique
    std::vector<std::uint64_t> keys;  // the distinct windows (packed by `key`), sorted
    std::vector<std::uint32_t> first; // the forms of keys[k] are forms[first[k] .. first[k + 1])
    std::vector<std::uint32_t> slots; // open addressing over keys: index + 1, 0 when empty
    std::vector<std::uint8_t> shift;  // Wu–Manber: by the window's last two bytes
    std::size_t window = 0;           // the shortest form's length, at most max_window
    std::size_t longest = 0;

    [[nodiscard]] std::string_view form(std::size_t i) const {
        return std::string_view(text).substr(forms[i].first, forms[i].second);
    }
    // The first `n` (≤ 8) bytes, big-endian from the top: keys sharing a prefix are neighbours when sorted.
    [[nodiscard]] static std::uint64_t key(const unsigned char* bytes, std::size_t n) {
        std::uint64_t out = 0;
        for (std::size_t i = 0; i < n; ++i) {
            out |= std::uint64_t{bytes[i]} << (8U * (7U - i));
        }
        return out;
    }
    [[nodiscard]] std::size_t slot_of(std::uint64_t k) const {
        return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ULL) >> 32U) & (slots.size() - 1);
    }
    // The index into keys of the window `k`, or -1.
    [[nodiscard]] std::ptrdiff_t find(std::uint64_t k) const {
        for (std::size_t at = slot_of(k);; at = (at + 1) & (slots.size() - 1)) {
            if (slots[at] == 0) {
                return -1;
            }
            if (keys[slots[at] - 1] == k) {
                return static_cast<std::ptrdiff_t>(slots[at] - 1);
            }
        }
    }
    // Whether some window begins with these `n` < window bytes.
    [[nodiscard]] bool window_begins_with(const unsigned char* bytes, std::size_t n) const {
        const std::uint64_t prefix = key(bytes, n);
        const auto at = std::lower_bound(keys.begin(), keys.end(), prefix);
        const unsigned cut = 8U * static_cast<unsigned>(8 - n);
        return at != keys.end() && (*at >> cut) == (prefix >> cut);
    }
};

secret_masker::secret_masker(const std::vector<std::string_view>& secrets) {
    auto built = std::make_shared<patterns>();
    auto& p = *built;
    auto add = [&p](std::string_view form) {
        if (form.size() >= min_secret_bytes) {
            p.forms.emplace_back(static_cast<std::uint32_t>(p.text.size()),
                                 static_cast<std::uint32_t>(form.size()));
            p.text.append(form);
        }
    };
    // Reserved to the byte first: growing by doubling would hold twice the forms for a moment (the
    // memory bound is the forms' bytes once).
    std::size_t total = 0;
    for (const auto secret : secrets) {
        if (secret.size() >= min_secret_bytes) {
            std::size_t reserved = 0;
            for (const char c : secret) {
                reserved += unreserved(static_cast<unsigned char>(c)) ? 0U : 1U;
            }
            total += secret.size() + 3 * (4 * secret.size() / 3 + 2) + 2 * (secret.size() + 2 * reserved);
        }
    }
    p.text.reserve(total);
    for (const auto secret : secrets) {
        if (secret.size() < min_secret_bytes) {
            skipped_ += secret.empty() ? 0U : 1U;
            continue;
        }
        add(secret);
        for (auto& form : secret_forms(secret)) {
            add(form);
            wipe(form);
        }
    }
    if (p.forms.empty()) {
        return;
    }
    // Sorted and unique by their bytes (duplicates' bytes stay in `text`: rare, and a copy would double it).
    const std::string_view text = p.text;
    auto view = [text](const std::pair<std::uint32_t, std::uint32_t>& f) {
        return text.substr(f.first, f.second);
    };
    std::sort(p.forms.begin(), p.forms.end(),
              [&](const auto& a, const auto& b) { return view(a) < view(b); });
    p.forms.erase(std::unique(p.forms.begin(), p.forms.end(),
                              [&](const auto& a, const auto& b) { return view(a) == view(b); }),
                  p.forms.end());
    p.window = patterns::max_window;
    for (const auto& f : p.forms) {
        p.window = std::min<std::size_t>(p.window, f.second);
        p.longest = std::max<std::size_t>(p.longest, f.second);
    }
    // The windows, in the forms' order (a sort by bytes sorts by window too).
    for (std::size_t i = 0; i < p.forms.size(); ++i) {
        const auto k = patterns::key(reinterpret_cast<const unsigned char*>(p.form(i).data()), p.window);
        if (p.keys.empty() || p.keys.back() != k) {
            p.keys.push_back(k);
            p.first.push_back(static_cast<std::uint32_t>(i));
        }
    }
    p.first.push_back(static_cast<std::uint32_t>(p.forms.size()));
    std::size_t size = 16;
    while (size < 2 * p.keys.size()) {
        size *= 2;
    }
    p.slots.assign(size, 0);
    for (std::size_t k = 0; k < p.keys.size(); ++k) {
        std::size_t at = p.slot_of(p.keys[k]);
        while (p.slots[at] != 0) {
            at = (at + 1) & (size - 1);
        }
        p.slots[at] = static_cast<std::uint32_t>(k + 1);
    }
    // From a position whose window ends in a pair that stands q bytes into some window, no occurrence
    // starts at the next window - 2 - q positions (the smallest such over all windows).
    p.shift.assign(std::size_t{1} << 16U, static_cast<std::uint8_t>(p.window - 1));
    for (std::size_t i = 0; i < p.forms.size(); ++i) {
        const auto* bytes = reinterpret_cast<const unsigned char*>(p.form(i).data());
        for (std::size_t q = 0; q + 1 < p.window; ++q) {
            const unsigned pair = (unsigned{bytes[q]} << 8U) | bytes[q + 1];
            p.shift[pair] = std::min(p.shift[pair], static_cast<std::uint8_t>(p.window - 2 - q));
        }
    }
    patterns_ = std::move(built);
}

std::size_t secret_masker::forms() const {
    return patterns_ ? patterns_->forms.size() : 0;
}

std::size_t secret_masker::table_bytes() const {
    if (!patterns_) {
        return 0;
    }
    const auto& p = *patterns_;
    return p.text.capacity() + p.forms.capacity() * sizeof(p.forms[0]) +
           p.keys.capacity() * sizeof(p.keys[0]) + p.first.capacity() * sizeof(p.first[0]) +
           p.slots.capacity() * sizeof(p.slots[0]) + p.shift.capacity();
}

void secret_masker::feed(std::string_view chunk, std::string& out) {
    if (empty()) {
        out.append(chunk);
        return;
    }
    pending_.append(chunk);
    resolve(false);
    emit(out);
}

void secret_masker::finish(std::string& out) {
    if (empty()) {
        return;
    }
    resolve(true);
    emit(out);
}

void secret_masker::resolve(bool final) {
    const auto& p = *patterns_;
    const auto* bytes = reinterpret_cast<const unsigned char*>(pending_.data());
    const std::size_t size = pending_.size();
    const std::size_t window = p.window;
    std::size_t i = static_cast<std::size_t>(scan_ - position_);
    while (i < size) {
        if (i + window > size) {
            // Fewer bytes than a window: they may begin one, unless nothing more will come.
            if (!final && p.window_begins_with(bytes + i, size - i)) {
                break;
            }
            ++i;
            continue;
        }
        if (const std::uint8_t skip =
                p.shift[(unsigned{bytes[i + window - 2]} << 8U) | bytes[i + window - 1]];
            skip > 0) {
            i += skip;
            continue;
        }
        const std::ptrdiff_t k = p.find(patterns::key(bytes + i, window));
        if (k < 0) {
            ++i;
            continue;
        }
        // The forms with this window: the longest that ends within what arrived; none may still be arriving.
        std::size_t longest = 0;
        bool open = false;
        const std::size_t here = size - i;
        for (std::uint32_t f = p.first[static_cast<std::size_t>(k)];
             f < p.first[static_cast<std::size_t>(k) + 1]; ++f) {
            const std::string_view form = p.form(f);
            const std::size_t compare = std::min(form.size(), here);
            if (std::memcmp(bytes + i + window, form.data() + window, compare - window) != 0) {
                continue;
            }
            if (form.size() <= here) {
                longest = std::max(longest, form.size());
            } else if (!final) {
                open = true;
                break;
            }
        }
        if (open) {
            break;
        }
        if (longest > 0) {
            // Runs are found in order of their start: one that overlaps or touches the last joins it.
            const std::uint64_t begin = position_ + i;
            const std::uint64_t end = begin + longest;
            if (!masked_runs_.empty() && masked_runs_.back().second >= begin) {
                masked_runs_.back().second = std::max(masked_runs_.back().second, end);
            } else {
                masked_runs_.emplace_back(begin, end);
            }
        }
        ++i;
    }
    scan_ = position_ + std::min(i, size);
}

void secret_masker::emit(std::string& out) {
    const std::uint64_t until = scan_;
    std::uint64_t at = position_;
    std::size_t done = 0; // masked runs emitted whole
    while (at < until) {
        if (done == masked_runs_.size() || masked_runs_[done].first >= until) {
            out.append(pending_, static_cast<std::size_t>(at - position_),
                       static_cast<std::size_t>(until - at));
            last_out_masked_ = false;
            break;
        }
        auto& run = masked_runs_[done];
        if (run.first > at) {
            out.append(pending_, static_cast<std::size_t>(at - position_),
                       static_cast<std::size_t>(run.first - at));
            last_out_masked_ = false;
        }
        // A stretch that continues one already shown (emitted before, or touching it) adds no second ***.
        if (!last_out_masked_) {
            out.append(replacement);
            ++masked_;
        }
        last_out_masked_ = true;
        at = std::min(run.second, until);
        if (run.second <= until) {
            ++done;
        } else {
            run.first = until; // the rest of it waits with the pending bytes
        }
    }
    masked_runs_.erase(masked_runs_.begin(), masked_runs_.begin() + static_cast<std::ptrdiff_t>(done));
    pending_.erase(0, static_cast<std::size_t>(until - position_));
    position_ = until;
}

} // namespace maka_eval::contracts
