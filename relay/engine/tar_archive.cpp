// One-file ustar archives (see tar_archive.hpp).
#include "relay/engine/tar_archive.hpp"

#include "posix/io.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

namespace maka_eval::relay {
namespace {

constexpr std::size_t block = 512;

void octal(char* field, std::size_t width, unsigned long long value) {
    // width-1 zero-padded octal digits, then NUL, as ustar wants.
    for (std::size_t i = width - 1; i-- > 0;) {
        field[i] = static_cast<char>('0' + (value & 7U));
        value >>= 3U;
    }
    field[width - 1] = '\0';
}

std::string header(std::string_view path, std::size_t size, unsigned mode, char type,
                   std::string_view link = {}) {
    std::array<char, block> h{};
    // std::copy_n, not memcpy: an empty view may have a null data() (no link), which memcpy must not get.
    std::copy_n(path.begin(), std::min<std::size_t>(path.size(), 100), h.begin());
    octal(h.data() + 100, 8, mode);
    octal(h.data() + 108, 8, 0); // uid
    octal(h.data() + 116, 8, 0); // gid
    octal(h.data() + 124, 12, size);
    octal(h.data() + 136, 12, 0);        // mtime
    std::memset(h.data() + 148, ' ', 8); // checksum is computed with its own field as spaces
    h[156] = type;
    std::copy_n(link.begin(), std::min<std::size_t>(link.size(), 100), h.begin() + 157);
    std::memcpy(h.data() + 257, "ustar", 6);
    std::memcpy(h.data() + 263, "00", 2);
    unsigned sum = 0;
    for (const char c : h) {
        sum += static_cast<unsigned char>(c);
    }
    octal(h.data() + 148, 7, sum); // six digits and NUL; the eighth byte stays a space
    return std::string(h.data(), h.size());
}

// Headers, then `size` bytes written by `fill` in place, then padding, the alias and the end blocks.
template <typename Fill>
bool build(std::string& out, std::string_view directory, std::string_view name, std::size_t size,
           unsigned mode, std::string_view alias, Fill&& fill) {
    const std::string dir = std::string(directory) + "/";
    out.reserve(4 * block + size + block);
    out = header(dir, 0, 0755, '5');
    out += header(dir + std::string(name), size, mode, '0');
    const std::size_t at = out.size();
    out.resize(at + size);
    if (!fill(out.data() + at)) {
        return false;
    }
    out.append((block - size % block) % block, '\0');
    if (!alias.empty()) {
        out += header(dir + std::string(alias), 0, 0777, '2', name);
    }
    out.append(2 * block, '\0');
    return true;
}

// A header's numeric field: octal digits, leading spaces or zeros, ended by NUL or space; nullopt for
// anything else (the base-256 form is for sizes past 8 GiB, which no helper is).
std::optional<unsigned long long> read_octal(std::string_view field) {
    unsigned long long value = 0;
    std::size_t i = 0;
    while (i < field.size() && field[i] == ' ') {
        ++i;
    }
    bool digits = false;
    for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i) {
        if (value > (~0ULL >> 3U)) {
            return std::nullopt;
        }
        value = (value << 3U) | static_cast<unsigned>(field[i] - '0');
        digits = true;
    }
    for (; i < field.size(); ++i) {
        if (field[i] != '\0' && field[i] != ' ') {
            return std::nullopt;
        }
    }
    return digits ? std::optional<unsigned long long>(value) : std::nullopt;
}

} // namespace

std::optional<tar_entry> first_tar_entry(std::string_view archive) {
    // PAX ('x', 'g') and GNU long-name ('L', 'K') records describe the entry after them: passed over.
    for (std::size_t at = 0, records = 0; records < 8 && archive.size() - at >= block; ++records) {
        const std::string_view h = archive.substr(at, block);
        if (h.find_first_not_of('\0') == std::string_view::npos) {
            return std::nullopt; // the end-of-archive blocks: no entry
        }
        const auto sum = read_octal(h.substr(148, 8));
        const auto size = read_octal(h.substr(124, 12));
        const auto mode = read_octal(h.substr(100, 8));
        if (!sum || !size || !mode) {
            return std::nullopt;
        }
        unsigned computed = 0;
        for (std::size_t i = 0; i < block; ++i) {
            computed += (i >= 148 && i < 156) ? unsigned{' '} : unsigned{static_cast<unsigned char>(h[i])};
        }
        const std::size_t room = archive.size() - at - block;
        if (computed != *sum || *size > room) {
            return std::nullopt;
        }
        const char type = h[156] == '\0' ? '0' : h[156];
        const std::string_view body = archive.substr(at + block, static_cast<std::size_t>(*size));
        if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
            const auto padded = (static_cast<std::size_t>(*size) + block - 1) / block * block;
            if (padded > room) {
                return std::nullopt;
            }
            at += block + padded;
            continue;
        }
        tar_entry entry{type, static_cast<unsigned>(*mode & 07777U), {}};
        if (type == '0' || type == '7') {
            entry.type = '0';
            entry.content.assign(body);
        }
        return entry;
    }
    return std::nullopt;
}

std::string tar_one_file(std::string_view directory, std::string_view name, std::string_view content,
                         unsigned mode, std::string_view alias) {
    std::string out;
    build(out, directory, name, content.size(), mode, alias, [&](char* at) {
        std::memcpy(at, content.data(), content.size());
        return true;
    });
    return out;
}

std::optional<std::string> tar_one_file_from(std::string_view directory, std::string_view name,
                                             const std::string& path, unsigned mode, std::string_view alias) {
    // What goes into a container is a helper binary (under 1 MiB): 256 MiB is more than any could be.
    const auto content = posix::read_file(path, std::size_t{256} << 20U);
    if (!content) {
        return std::nullopt;
    }
    std::string out;
    const bool ok = build(out, directory, name, content->size(), mode, alias, [&](char* at) {
        std::char_traits<char>::copy(at, content->data(), content->size());
        return true;
    });
    if (!ok) {
        return std::nullopt;
    }
    return out;
}

} // namespace maka_eval::relay
