// Result-frame encoding and the original relay's projection, stream-friendly (see result_frame.hpp).
#include "contracts/result_frame.hpp"

#include "contracts/limits.hpp"
#include "contracts/python_text.hpp"
#include "contracts/table_category.hpp"

#include <algorithm>

namespace maka_eval::contracts {
namespace {

constexpr name_table<frame_error, 2> frame_category_messages{{
    {frame_error::invalid_token, "invalid Maka Eval result token"},
    {frame_error::payload_too_large, "Maka Eval result payload exceeds 2048 bytes"},
}};

} // namespace

bool is_lower_hex(std::string_view text, std::size_t size) {
    return text.size() == size && std::all_of(text.begin(), text.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

namespace {

// Splits on single spaces into at most `limit` fields, as str.split(" ", limit - 1) does.
std::vector<std::string_view> split_spaces(std::string_view text, std::size_t limit) {
    std::vector<std::string_view> fields;
    while (fields.size() + 1 < limit) {
        const auto space = text.find(' ');
        if (space == std::string_view::npos) {
            break;
        }
        fields.push_back(text.substr(0, space));
        text.remove_prefix(space + 1);
    }
    fields.push_back(text);
    return fields;
}

// The frame fields are judged only after there is exactly one candidate line; false means invalid.
bool decode_frame_line(std::string_view line, std::string_view token, std::string& payload) {
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) {
        line.remove_suffix(1);
    }
    const auto fields = split_spaces(line, 5);
    if (fields.size() != 5) {
        return false;
    }
    const auto length = python::parse_int(fields[2]);
    if (!length) {
        return false;
    }
    // b64decode only takes ASCII text; the padding the original appends is counted in code points.
    const std::string_view encoded = fields[4];
    if (std::any_of(encoded.begin(), encoded.end(),
                    [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
        return false;
    }
    std::string padded(encoded);
    padded.append((4 - encoded.size() % 4) % 4, '=');
    auto decoded = python::b64decode_strict(padded);
    if (!decoded) {
        return false;
    }
    if (fields[1] != token || *length < 0 || *length > static_cast<std::int64_t>(payload_limit_bytes) ||
        decoded->size() != static_cast<std::size_t>(*length) || !is_lower_hex(fields[3], 64) ||
        sha256_hex(*decoded) != fields[3] || !is_valid_utf8(*decoded)) {
        return false;
    }
    payload = std::move(*decoded);
    return true;
}

projection whole_carrier(category kind, const carrier& finished) {
    return {"", diagnostic::evidence(kind, finished.size(), finished.sha256_hex())};
}

} // namespace

const boost::system::error_category& frame_category() noexcept {
    static const table_category instance("maka_eval.frame", frame_category_messages, "unknown frame error");
    return instance;
}

boost::system::error_code make_error_code(frame_error e) noexcept {
    return {static_cast<int>(e), frame_category()};
}

bool is_result_token(std::string_view token) {
    return is_lower_hex(token, 32);
}

boost::system::result<std::string> encode_frame(std::string_view token, std::string_view payload) {
    if (!is_result_token(token)) {
        return frame_error::invalid_token;
    }
    if (payload.size() > payload_limit_bytes) {
        return frame_error::payload_too_large;
    }
    std::string line(result_frame_prefix);
    line.append(" ").append(token).append(" ").append(std::to_string(payload.size()));
    line.append(" ").append(sha256_hex(payload)).append(" ").append(python::b64encode_url_unpadded(payload));
    line.push_back('\n');
    return line;
}

std::string scope_error_line(std::string_view result_token) {
    std::string line(scope_error_prefix);
    line.append(" ").append(result_token).append("\n");
    return line;
}

void carrier::keep(std::string_view repaired) {
    size_ += repaired.size();
    // One byte past the limit is enough to know the carrier is oversize; nothing more is ever needed.
    const std::size_t room = carrier_limit + 1 - std::min<std::size_t>(kept_.size(), carrier_limit + 1);
    kept_.append(repaired.substr(0, std::min(room, repaired.size())));
}

void carrier::part() {
    if (raw_ != nullptr) {
        digest_ = *raw_; // the raw stream's state before this chunk: it is fed after the carrier
        raw_ = nullptr;
    }
}

void carrier::feed(std::string_view raw) {
    if (raw_ != nullptr && repair_.idle() && valid_utf8_prefix(raw) == raw.size()) {
        keep(raw); // unchanged: the followed digest takes these bytes
        return;
    }
    part();
    scratch_.clear();
    repair_.feed(raw, scratch_);
    digest_.update(scratch_);
    keep(scratch_);
}

void carrier::finish() {
    scratch_.clear();
    repair_.finish(scratch_);
    if (!scratch_.empty()) {
        part();
        digest_.update(scratch_);
        keep(scratch_);
    }
}

projection project(const carrier& finished, std::string_view result_token, bool capture_stdout,
                   const carrier* merged_stderr) {
    // The scope error counts only when it is the entire carrier, so a subject cannot counterfeit it by
    // printing the line among other output (C5); it wins whatever the stdout policy.
    if (!finished.oversize() && finished.text() == scope_error_line(result_token)) {
        return whole_carrier(category::execution_scope_unavailable, finished);
    }
    if (!capture_stdout) {
        return {"", diagnostic::none()};
    }
    if (finished.oversize()) {
        return whole_carrier(category::result_frame_oversize, finished);
    }
    const std::string_view text = finished.text();
    std::string prefix(result_frame_prefix);
    prefix.append(" ").append(result_token).append(" ");
    std::string_view frame;
    std::size_t candidates = 0;
    for (const auto line : python::splitlines(text)) {
        if (line.substr(0, prefix.size()) == prefix) {
            frame = line;
            ++candidates;
        }
    }
    if (candidates != 1) {
        return whole_carrier(
            candidates == 0 ? category::result_frame_missing : category::result_frame_ambiguous, finished);
    }
    std::string payload;
    if (!decode_frame_line(frame, result_token, payload)) {
        return whole_carrier(category::result_frame_invalid, finished);
    }
    // The original removes the first occurrence of the frame's text, which may sit inside an earlier line.
    std::string noise(text);
    noise.erase(noise.find(frame), frame.size());
    if (merged_stderr != nullptr && merged_stderr->size() > 0) {
        // Streamed stderr first (it may be any size), then stdout's noise, which is held (the carrier fits).
        return {std::move(payload),
                diagnostic::evidence(category::unstructured_output, merged_stderr->size() + noise.size(),
                                     merged_stderr->sha256_hex_after(noise))};
    }
    if (noise.empty()) {
        return {std::move(payload), diagnostic::none()};
    }
    return {std::move(payload), diagnostic::over(category::unstructured_output, noise)};
}

projection project(std::string_view raw, std::string_view result_token, bool capture_stdout) {
    carrier whole;
    whole.feed(raw);
    whole.finish();
    return project(whole, result_token, capture_stdout);
}

} // namespace maka_eval::contracts
