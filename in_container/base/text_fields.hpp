// Numbers and whitespace-separated fields as the helper reads them — its records (scope, leftovers), /proc
// lines, command-line values — without iostreams: an <sstream> in the static helper pulls in libstdc++'s
// locale machinery, a third of the binary that goes into every container.
#pragma once

#include <charconv>
#include <string_view>

namespace maka_eval::in_container {

// `text`, whole, as a number of type T (no sign for an unsigned T, nothing before or after it).
template <class T>
bool parse_number(std::string_view text, T& out) {
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc() && ptr == end;
}

// The next field of `text` (after any whitespace), consumed; empty at the end.
inline std::string_view next_field(std::string_view& text) {
    constexpr std::string_view space = " \t\r\n";
    const auto begin = text.find_first_not_of(space);
    if (begin == std::string_view::npos) {
        text = {};
        return {};
    }
    const auto end = text.find_first_of(space, begin);
    const auto field =
        text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end);
    return field;
}

// The next field as a whole number of type T; false (nothing consumed that matters) when it is not one.
template <class T>
bool next_number(std::string_view& text, T& out) {
    return parse_number(next_field(text), out);
}

} // namespace maka_eval::in_container
