// Python-compatible JSON writing and bounded NDJSON line parsing (see wire_json.hpp).
#include "contracts/wire_json.hpp"

#include "contracts/table_category.hpp"
#include "contracts/utf8.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace maka_eval::contracts {
namespace {

constexpr name_table<line_error, 4> line_category_messages{{
    {line_error::too_long, "message line exceeds the size limit"},
    {line_error::not_utf8, "message line is not UTF-8"},
    {line_error::malformed_json, "message line is not JSON"},
    {line_error::not_an_object, "message line is not a JSON object"},
}};

void append_u_escape(std::string& out, unsigned value) {
    static constexpr char digits[] = "0123456789abcdef";
    out.append("\\u");
    for (int shift = 12; shift >= 0; shift -= 4) {
        out.push_back(digits[(value >> static_cast<unsigned>(shift)) & 0xFU]);
    }
}

void write(std::string& out, const boost::json::value& value) {
    switch (value.kind()) {
    case boost::json::kind::null:
        out.append("null");
        return;
    case boost::json::kind::bool_:
        out.append(value.get_bool() ? "true" : "false");
        return;
    case boost::json::kind::int64:
        out.append(std::to_string(value.get_int64()));
        return;
    case boost::json::kind::uint64:
        out.append(std::to_string(value.get_uint64()));
        return;
    case boost::json::kind::double_:
        // No message of either protocol carries a float; Boost's shortest round-trip form is a fine fallback.
        out.append(boost::json::serialize(value));
        return;
    case boost::json::kind::string:
        append_wire_string(out, value.get_string());
        return;
    case boost::json::kind::array: {
        out.push_back('[');
        bool first = true;
        for (const auto& item : value.get_array()) {
            if (!first) {
                out.push_back(',');
            }
            first = false;
            write(out, item);
        }
        out.push_back(']');
        return;
    }
    case boost::json::kind::object: {
        out.push_back('{');
        bool first = true;
        for (const auto& member : value.get_object()) {
            if (!first) {
                out.push_back(',');
            }
            first = false;
            append_wire_string(out, member.key());
            out.push_back(':');
            write(out, member.value());
        }
        out.push_back('}');
        return;
    }
    }
}

} // namespace

void append_wire_string(std::string& out, std::string_view utf8) {
    out.push_back('"');
    for (std::size_t pos = 0; pos < utf8.size();) {
        // Printable ASCII other than the quote and the backslash stands for itself: appended a run at a time
        // (a credential of megabytes is one run).
        std::size_t plain = pos;
        while (plain < utf8.size() && utf8[plain] >= 0x20 && utf8[plain] < 0x7F && utf8[plain] != '"' &&
               utf8[plain] != '\\') {
            ++plain;
        }
        if (plain > pos) {
            out.append(utf8, pos, plain - pos);
            pos = plain;
            continue;
        }
        const char32_t c = next_code_point(utf8, pos);
        switch (c) {
        case '"':
            out.append("\\\"");
            continue;
        case '\\':
            out.append("\\\\");
            continue;
        case '\n':
            out.append("\\n");
            continue;
        case '\r':
            out.append("\\r");
            continue;
        case '\t':
            out.append("\\t");
            continue;
        case '\b':
            out.append("\\b");
            continue;
        case '\f':
            out.append("\\f");
            continue;
        default:
            break;
        }
        if (c >= 0x20 && c < 0x7F) {
            out.push_back(static_cast<char>(c));
        } else if (c < 0x10000) {
            append_u_escape(out, static_cast<unsigned>(c));
        } else {
            const auto v = static_cast<unsigned>(c - 0x10000);
            append_u_escape(out, 0xD800U | (v >> 10U));
            append_u_escape(out, 0xDC00U | (v & 0x3FFU));
        }
    }
    out.push_back('"');
}

std::string to_wire(const boost::json::value& value) {
    std::string out;
    write(out, value);
    return out;
}

const boost::system::error_category& line_category() noexcept {
    static const table_category instance("maka_eval.line", line_category_messages, "unknown line error");
    return instance;
}

boost::system::error_code make_error_code(line_error e) noexcept {
    return {static_cast<int>(e), line_category()};
}

boost::system::result<boost::json::object> parse_object(std::string_view line, std::size_t limit) {
    if (line.size() > limit) {
        return line_error::too_long;
    }
    if (!is_valid_utf8(line)) {
        return line_error::not_utf8;
    }
    boost::system::error_code ec;
    boost::json::value value = boost::json::parse(line, ec);
    if (ec) {
        return line_error::malformed_json;
    }
    if (!value.is_object()) {
        return line_error::not_an_object;
    }
    return std::move(value.get_object());
}

} // namespace maka_eval::contracts
