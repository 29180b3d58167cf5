// JSON text byte-identical to the original relay's `json.dumps(value, separators=(",", ":"))`.
//
// Python escapes every character outside printable ASCII (ensure_ascii) as lowercase \uXXXX, astral
// characters as surrogate pairs, and DEL too; Boost.JSON's serializer writes raw UTF-8. Messages on both
// wires go through this writer so a byte-level diff against the original shows nothing. Parsing stays with
// Boost.JSON (`parse_object`), which also keeps the last of duplicate keys, as Python does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::contracts {

// Compact, key order preserved, ensure_ascii. `value` strings must be valid UTF-8 (Boost.JSON's are).
[[nodiscard]] std::string to_wire(const boost::json::value& value);
void append_wire_string(std::string& out, std::string_view utf8);

enum class line_error {
    too_long = 1,   // longer than the caller's bound
    not_utf8,       // the bytes are not UTF-8
    malformed_json, // not one JSON value
    not_an_object,  // valid JSON, but not an object
};
[[nodiscard]] const boost::system::error_category& line_category() noexcept;
[[nodiscard]] boost::system::error_code make_error_code(line_error e) noexcept;

// One NDJSON line (a trailing "\n" or "\r\n" allowed) into an object; `limit` bounds its size in bytes.
[[nodiscard]] boost::system::result<boost::json::object> parse_object(std::string_view line,
                                                                      std::size_t limit);

} // namespace maka_eval::contracts

template <>
struct boost::system::is_error_code_enum<maka_eval::contracts::line_error> : std::true_type {};
